package saramawire

import (
	"fmt"
	"reflect"
	"testing"

	"github.com/IBM/sarama"
)

// TestFetch: the sarama in use lays out the fetch request's fields as
// expected, and the writes land in them.
func TestFetch(t *testing.T) {
	if !FetchOK {
		t.Fatal("sarama's FetchRequest does not have the forgotten and lastFetchedEpoch fields expected")
	}
	req := &sarama.FetchRequest{Version: 12}
	req.AddBlock("t", 3, 100, 1<<20, 7)
	req.AddBlock("t", 4, 200, 1<<20, 7)
	SetLastFetchedEpoch(req, "t", 3, 5)
	SetLastFetchedEpoch(req, "t", 9, 5) // not in the request: nothing
	SetLastFetchedEpoch(req, "u", 3, 5) // nor this
	SetForgotten(req, map[string][]int32{"u": {1, 2}})
	v := reflect.ValueOf(req).Elem()
	if got := fmt.Sprint(v.FieldByName("forgotten")); got != "map[u:[1 2]]" {
		t.Errorf("forgotten: %s", got)
	}
	checkBlocks(t, v, "lastFetchedEpoch", map[int32]int64{3: 5, 4: -1})
}

// TestOffset: likewise for the list-offsets request.
func TestOffset(t *testing.T) {
	if !OffsetOK {
		t.Fatal("sarama's OffsetRequest does not have the currentLeaderEpoch field expected")
	}
	req := sarama.NewOffsetRequest(sarama.V3_9_0_0)
	req.AddBlock("t", 3, -1, 1)
	req.AddBlock("t", 4, -1, 1)
	SetCurrentLeaderEpoch(req, "t", 4, 8)
	SetCurrentLeaderEpoch(req, "t", 5, 8)
	checkBlocks(t, reflect.ValueOf(req).Elem(), "currentLeaderEpoch", map[int32]int64{3: -1, 4: 8})
}

func checkBlocks(t *testing.T, req reflect.Value, field string, want map[int32]int64) {
	t.Helper()
	blocks := req.FieldByName("blocks")
	if blocks.Len() != 1 {
		t.Errorf("%d topics; want 1", blocks.Len())
	}
	tb := blocks.MapIndex(reflect.ValueOf("t"))
	if tb.Len() != len(want) {
		t.Errorf("%d blocks; want %d", tb.Len(), len(want))
	}
	for p, w := range want {
		if got := tb.MapIndex(reflect.ValueOf(p)).Elem().FieldByName(field).Int(); got != w {
			t.Errorf("partition %d: %s %d; want %d", p, field, got, w)
		}
	}
}
