package lag

import (
	"fmt"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

type (
	kmsgReq  = kmsg.OffsetCommitRequest
	kmsgResp = kmsg.OffsetCommitResponse
)

// commitErr returns the first partition error of an offset commit.
func commitErr(resp *kmsg.OffsetCommitResponse) error {
	for _, t := range resp.Topics {
		for _, p := range t.Partitions {
			if err := kerr.ErrorForCode(p.ErrorCode); err != nil {
				return fmt.Errorf("%s/%d: %w", t.Topic, p.Partition, err)
			}
		}
	}
	return nil
}

func contains(s, sub string) bool { return strings.Contains(s, sub) }
