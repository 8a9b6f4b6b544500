package retrypolicy_test

import (
	"fmt"
	"time"

	"github.com/redrive/redrive/retrypolicy"
)

func ExampleParseSchedule() {
	s, err := retrypolicy.ParseSchedule("1s -> 5s -> 30s -> 5m -> 1d")
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(s)
	fmt.Println(s.Delay(1), s.Delay(5), s.Delay(9)) // the last delay repeats

	_, err = retrypolicy.ParseSchedule("1s -> 5 -> 30s")
	fmt.Println(err)
	// Output:
	// 1s -> 5s -> 30s -> 5m -> 24h
	// 1s 24h0m0s 24h0m0s
	// invalid retry policy: schedule "1s -> 5 -> 30s": step 2: "5" is not a duration
}

func ExamplePolicy_Next() {
	backoff, _ := retrypolicy.ParseSchedule("1s -> 5s -> 30s")
	p := retrypolicy.Policy{
		MaxRetries:   3,
		Backoff:      backoff,
		NonRetriable: []string{"validation"},
	}
	for failures := 1; ; failures++ {
		v := p.Next(failures, "timeout", 0)
		if !v.Retry {
			fmt.Printf("failure %d: dead-letter (%s)\n", failures, v.Reason)
			break
		}
		fmt.Printf("failure %d: retry in %s\n", failures, v.Delay)
	}
	fmt.Printf("validation error: %+v\n", p.Next(1, "validation", 0))
	fmt.Printf("after a day: %+v\n", retrypolicy.Policy{MaxRetries: 3, MaxElapsed: time.Hour}.Next(2, "timeout", 24*time.Hour))
	// Output:
	// failure 1: retry in 1s
	// failure 2: retry in 5s
	// failure 3: retry in 30s
	// failure 4: dead-letter (max_retries)
	// validation error: {Retry:false Delay:0s Reason:permanent}
	// after a day: {Retry:false Delay:0s Reason:max_retries}
}
