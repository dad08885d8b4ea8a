// Package saramawire writes request fields that sarama encodes but gives
// no way to set: the forgotten partitions of an incremental fetch (fetch
// sessions), a fetch partition's last fetched epoch (Fetch v12), and a
// list-offsets partition's current leader epoch (ListOffsets v4). They
// are sarama's unexported fields, located by name and type when the
// package loads; when the sarama in use lays them out otherwise, FetchOK
// or OffsetOK is false and the setters must not be called (the callers
// then do without).
package saramawire

import (
	"reflect"
	"unsafe"

	"github.com/IBM/sarama"
)

var (
	// FetchOK: SetForgotten and SetLastFetchedEpoch may be used.
	FetchOK bool
	// OffsetOK: SetCurrentLeaderEpoch may be used.
	OffsetOK bool

	forgottenOff uintptr // FetchRequest.forgotten: map[string][]int32
	fetchBlocks  blocks  // FetchRequest.blocks, fetchRequestBlock.lastFetchedEpoch
	offsetBlocks blocks  // OffsetRequest.blocks, offsetRequestBlock.currentLeaderEpoch
)

// blocks locates an int32 field of the blocks of a request kept in a
// map[string]map[int32]*block field.
type blocks struct {
	off     uintptr // of the map in the request
	typ     reflect.Type
	field   uintptr // of the int32 in the block
	present bool
}

func locate(req reflect.Type, mapField, blockField string) blocks {
	m, ok := req.FieldByName(mapField)
	if !ok || m.Type.Kind() != reflect.Map || m.Type.Key().Kind() != reflect.String {
		return blocks{}
	}
	inner := m.Type.Elem()
	if inner.Kind() != reflect.Map || inner.Key().Kind() != reflect.Int32 || inner.Elem().Kind() != reflect.Pointer {
		return blocks{}
	}
	f, ok := inner.Elem().Elem().FieldByName(blockField)
	if !ok || f.Type.Kind() != reflect.Int32 {
		return blocks{}
	}
	return blocks{off: m.Offset, typ: m.Type, field: f.Offset, present: true}
}

func init() {
	rt := reflect.TypeFor[sarama.FetchRequest]()
	if f, ok := rt.FieldByName("forgotten"); ok && f.Type == reflect.TypeFor[map[string][]int32]() {
		forgottenOff = f.Offset
		fetchBlocks = locate(rt, "blocks", "lastFetchedEpoch")
		FetchOK = fetchBlocks.present
	}
	offsetBlocks = locate(reflect.TypeFor[sarama.OffsetRequest](), "blocks", "currentLeaderEpoch")
	OffsetOK = offsetBlocks.present
}

// set writes v into the field of the block of topic/partition of the
// request at req (nothing when the request has no such block).
func (b *blocks) set(req unsafe.Pointer, topic string, partition, v int32) {
	m := reflect.NewAt(b.typ, unsafe.Add(req, b.off)).Elem()
	tm := m.MapIndex(reflect.ValueOf(topic))
	if !tm.IsValid() {
		return
	}
	bp := tm.MapIndex(reflect.ValueOf(partition))
	if !bp.IsValid() || bp.IsNil() {
		return
	}
	*(*int32)(unsafe.Add(bp.UnsafePointer(), b.field)) = v
}

// SetForgotten sets the partitions an incremental fetch request removes
// from its session (sarama encodes them from Fetch v7 on).
func SetForgotten(req *sarama.FetchRequest, forgotten map[string][]int32) {
	*(*map[string][]int32)(unsafe.Add(unsafe.Pointer(req), forgottenOff)) = forgotten
}

// SetLastFetchedEpoch sets the last fetched epoch of a partition added to
// req (encoded from Fetch v12 on; AddBlock sets -1, none).
func SetLastFetchedEpoch(req *sarama.FetchRequest, topic string, partition, epoch int32) {
	fetchBlocks.set(unsafe.Pointer(req), topic, partition, epoch)
}

// SetCurrentLeaderEpoch sets the current leader epoch of a partition
// added to req (encoded from ListOffsets v4 on; AddBlock sets -1, none).
func SetCurrentLeaderEpoch(req *sarama.OffsetRequest, topic string, partition, epoch int32) {
	offsetBlocks.set(unsafe.Pointer(req), topic, partition, epoch)
}
