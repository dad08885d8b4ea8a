package ops

import (
	"errors"
	"testing"
	"time"

	"github.com/IBM/sarama"
)

// TestKafkaCommittedWaitsForLoad: a coordinator that answers
// COORDINATOR_LOAD_IN_PROGRESS (a broker just started) is asked again until
// it has loaded the group's offsets; one that keeps loading past loadWait is
// an error that says so.
func TestKafkaCommittedWaitsForLoad(t *testing.T) {
	for _, tc := range []struct {
		name    string
		loading int // answers "still loading" before the offsets
		wait    time.Duration
		wantErr bool
	}{
		{"loaded", 0, time.Second, false},
		{"loading, then loaded", 3, 5 * time.Second, false},
		{"loading past the wait", 1000, 200 * time.Millisecond, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			defer func(w, b time.Duration) { loadWait, loadBackoff = w, b }(loadWait, loadBackoff)
			loadWait, loadBackoff = tc.wait, 5*time.Millisecond
			b := sarama.NewMockBroker(t, 1)
			defer b.Close()
			var fetches []any
			for range min(tc.loading, 100) {
				fetches = append(fetches, sarama.NewMockOffsetFetchResponse(t).SetError(sarama.ErrOffsetsLoadInProgress))
			}
			if tc.loading < 100 {
				fetches = append(fetches, sarama.NewMockOffsetFetchResponse(t).SetOffset("g", "t", 0, 7, "", sarama.ErrNoError))
			}
			b.SetHandlerByMap(map[string]sarama.MockResponse{
				"MetadataRequest":        sarama.NewMockMetadataResponse(t).SetBroker(b.Addr(), b.BrokerID()).SetController(b.BrokerID()),
				"FindCoordinatorRequest": sarama.NewMockFindCoordinatorResponse(t).SetCoordinator(sarama.CoordinatorGroup, "g", b),
				"OffsetFetchRequest":     sarama.NewMockSequence(fetches...),
			})
			cfg := sarama.NewConfig()
			cfg.Version = sarama.V2_1_0_0
			cfg.ApiVersionsRequest = false
			cfg.Net.ReadTimeout = 5 * time.Second
			admin, err := sarama.NewClusterAdmin([]string{b.Addr()}, cfg)
			if err != nil {
				t.Fatal(err)
			}
			defer admin.Close()
			got, err := KafkaCommitted(admin, "g")
			switch {
			case tc.wantErr && !errors.Is(err, sarama.ErrOffsetsLoadInProgress):
				t.Fatalf("err %v; want the coordinator still loading", err)
			case !tc.wantErr && err != nil:
				t.Fatal(err)
			case !tc.wantErr && got["t"][0] != 7:
				t.Fatalf("offsets %v; want t/0 at 7", got)
			}
		})
	}
}
