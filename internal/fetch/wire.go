package fetch

import (
	"reflect"
	"unsafe"

	"github.com/IBM/sarama"
)

// sarama's FetchRequest encodes two fields it gives no way to set: the
// forgotten partitions of an incremental request (fetch sessions) and
// each partition's last fetched epoch (Fetch v12, which lets the broker
// report a diverging epoch: a truncated log). Both are written here into
// sarama's unexported fields, located by name and type when the package
// loads; when the sarama in use lays them out otherwise, wireOK is false
// and the fetcher does without sessions and last fetched epochs, as
// before.
var (
	forgottenOff uintptr // FetchRequest.forgotten: map[string][]int32
	blocksOff    uintptr // FetchRequest.blocks: map[string]map[int32]*fetchRequestBlock
	lastEpochOff uintptr // fetchRequestBlock.lastFetchedEpoch: int32
	blocksType   reflect.Type
	wireOK       bool
)

func init() {
	rt := reflect.TypeFor[sarama.FetchRequest]()
	f, ok := rt.FieldByName("forgotten")
	if !ok || f.Type != reflect.TypeFor[map[string][]int32]() {
		return
	}
	forgottenOff = f.Offset
	b, ok := rt.FieldByName("blocks")
	if !ok || b.Type.Kind() != reflect.Map || b.Type.Key().Kind() != reflect.String {
		return
	}
	inner := b.Type.Elem()
	if inner.Kind() != reflect.Map || inner.Key().Kind() != reflect.Int32 || inner.Elem().Kind() != reflect.Pointer {
		return
	}
	blk := inner.Elem().Elem()
	e, ok := blk.FieldByName("lastFetchedEpoch")
	if !ok || e.Type.Kind() != reflect.Int32 {
		return
	}
	blocksOff, lastEpochOff, blocksType = b.Offset, e.Offset, b.Type
	wireOK = true
}

// setForgotten sets the partitions an incremental request removes from
// its session (Fetch v7 and later; sarama encodes them only then).
func setForgotten(req *sarama.FetchRequest, forgotten map[string][]int32) {
	*(*map[string][]int32)(unsafe.Add(unsafe.Pointer(req), forgottenOff)) = forgotten
}

// setLastFetchedEpoch sets the last fetched epoch of a partition added to
// req (Fetch v12 and later; AddBlock sets -1, none).
func setLastFetchedEpoch(req *sarama.FetchRequest, topic string, partition int32, epoch int32) {
	m := reflect.NewAt(blocksType, unsafe.Add(unsafe.Pointer(req), blocksOff)).Elem()
	tm := m.MapIndex(reflect.ValueOf(topic))
	if !tm.IsValid() {
		return
	}
	bp := tm.MapIndex(reflect.ValueOf(partition))
	if !bp.IsValid() || bp.IsNil() {
		return
	}
	*(*int32)(unsafe.Add(bp.UnsafePointer(), lastEpochOff)) = epoch
}
