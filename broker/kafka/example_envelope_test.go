package kafka_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/redrive/redrive/broker/driver"
	"github.com/redrive/redrive/broker/kafka"
)

func ExampleEncodeEnvelope() {
	e := driver.Entry{
		OriginalTopic:     "escrow.commands",
		OriginalPartition: 3,
		OriginalOffset:    12345,
		OriginalKey:       []byte("deal_550e8400"),
		OriginalValue:     []byte(`{"deal":"550e8400","amount":1250}`),
		OriginalHeaders:   map[string]string{"content-type": "application/json"},
		ErrorClass:        "payout.BankError",
		ErrorMessage:      "bank rejected the transfer",
		Reason:            "max_retries",
		RetryCount:        5,
		WorkerInstance:    "payout-executor-1",
		FirstFailureAt:    time.Date(2025, 1, 15, 10, 30, 0, 0, time.UTC),
		LastFailureAt:     time.Date(2025, 1, 15, 11, 45, 0, 0, time.UTC),
	}
	data, err := kafka.EncodeEnvelope(e)
	if err != nil {
		fmt.Println(err)
		return
	}
	var out bytes.Buffer
	_ = json.Indent(&out, data, "", "  ") // for display only: store data as is
	fmt.Println(out.String())

	back, err := kafka.DecodeEnvelope(data)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(bytes.Equal(back.OriginalValue, e.OriginalValue))
	// Output:
	// {
	//   "original_topic": "escrow.commands",
	//   "original_partition": 3,
	//   "original_offset": 12345,
	//   "original_key": "deal_550e8400",
	//   "original_value": {
	//     "deal": "550e8400",
	//     "amount": 1250
	//   },
	//   "original_value_encoding": "json",
	//   "original_headers": {
	//     "content-type": "application/json"
	//   },
	//   "error_details": {
	//     "exception_class": "payout.BankError",
	//     "message": "bank rejected the transfer",
	//     "stack_trace": ""
	//   },
	//   "reason": "max_retries",
	//   "retry_count": 5,
	//   "worker_instance": "payout-executor-1",
	//   "first_failure_at": "2025-01-15T10:30:00Z",
	//   "last_failure_at": "2025-01-15T11:45:00Z"
	// }
	// true
}

func ExampleDecodeEnvelope() {
	_, err := kafka.DecodeEnvelope([]byte("not an envelope"))
	fmt.Println(errors.Is(err, kafka.ErrNotEnvelope))
	// Output: true
}
