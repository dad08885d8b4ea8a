package fetch

import (
	"fmt"
	"reflect"
	"testing"

	"github.com/IBM/sarama"
)

// TestWire: the sarama in use lays out the fields the fetcher writes as
// expected, and the writes land in them.
func TestWire(t *testing.T) {
	if !wireOK {
		t.Fatal("sarama's FetchRequest does not have the forgotten and lastFetchedEpoch fields the fetcher writes")
	}
	req := &sarama.FetchRequest{Version: 12}
	req.AddBlock("t", 3, 100, 1<<20, 7)
	req.AddBlock("t", 4, 200, 1<<20, 7)
	setLastFetchedEpoch(req, "t", 3, 5)
	setLastFetchedEpoch(req, "t", 9, 5) // not in the request: nothing
	setForgotten(req, map[string][]int32{"u": {1, 2}})
	v := reflect.ValueOf(req).Elem()
	if got := fmt.Sprint(v.FieldByName("forgotten")); got != "map[u:[1 2]]" {
		t.Errorf("forgotten: %s", got)
	}
	blocks := v.FieldByName("blocks").MapIndex(reflect.ValueOf("t"))
	for p, want := range map[int32]int64{3: 5, 4: -1} {
		got := blocks.MapIndex(reflect.ValueOf(p)).Elem().FieldByName("lastFetchedEpoch").Int()
		if got != want {
			t.Errorf("partition %d: lastFetchedEpoch %d; want %d", p, got, want)
		}
	}
	if n := blocks.Len(); n != 2 {
		t.Errorf("%d blocks; want 2", n)
	}
}
