package manager

import (
	"errors"
	"reflect"
	"testing"

	"github.com/zkgroup/zkgroup/internal/partition"
)

// TestMessageLayout: Message and Batch are the partition manager's
// Message and Batch seen through another type (message.go converts
// pointers between them): every field at the same offset, of the same
// size and kind, exported ones with the same name and type (or the twin
// type), and the same total size. A field added to one and not the other
// fails here.
func TestMessageLayout(t *testing.T) {
	twins := map[reflect.Type]reflect.Type{
		reflect.TypeFor[*Message]():   reflect.TypeFor[*partition.Message](),
		reflect.TypeFor[[]*Message](): reflect.TypeFor[[]*partition.Message](),
	}
	for _, pair := range [][2]reflect.Type{
		{reflect.TypeFor[Message](), reflect.TypeFor[partition.Message]()},
		{reflect.TypeFor[Batch](), reflect.TypeFor[partition.Batch]()},
	} {
		ours, theirs := pair[0], pair[1]
		if ours.Size() != theirs.Size() || ours.Align() != theirs.Align() || ours.NumField() != theirs.NumField() {
			t.Fatalf("%v: size %d, align %d, %d fields; %v: %d, %d, %d", ours, ours.Size(), ours.Align(), ours.NumField(),
				theirs, theirs.Size(), theirs.Align(), theirs.NumField())
		}
		for i := range ours.NumField() {
			a, b := ours.Field(i), theirs.Field(i)
			same := a.Type == b.Type || twins[a.Type] == b.Type
			if !same && !a.IsExported() {
				// Unexported twins hold the same types by construction;
				// compare what decides the layout and the pointers.
				same = a.Type.Kind() == b.Type.Kind() && a.Type.Size() == b.Type.Size() &&
					(a.Type.Kind() != reflect.Pointer || a.Type.Elem() == b.Type.Elem())
			}
			if a.Offset != b.Offset || !same || a.IsExported() != b.IsExported() || (a.IsExported() && a.Name != b.Name) {
				t.Errorf("%v field %d: %s %v at %d; %v has %s %v at %d", ours, i, a.Name, a.Type, a.Offset, theirs, b.Name, b.Type, b.Offset)
			}
		}
	}
	// Conversions both ways keep the values.
	pm := &partition.Message{Topic: "t", Partition: 3, Offset: 7, Value: []byte("v")}
	if m := messageOf(pm); m.Topic != "t" || m.Partition != 3 || m.Offset != 7 || string(m.Value) != "v" || m.p() != pm {
		t.Errorf("messageOf: %+v", m)
	}
	pb := &partition.Batch{Topic: "t", Partition: 3, Messages: []*partition.Message{pm}}
	if b := batchOf(pb); b.Len() != 1 || b.Messages[0].Offset != 7 || b.p() != pb {
		t.Errorf("batchOf: %+v", b)
	}
	var nilMsg *Message
	if r := nilMsg.Ack(); r != AckInvalid {
		t.Errorf("nil message Ack: %v, want invalid", r)
	}
	if r := (&Batch{}).Ack(); r != AckInvalid {
		t.Errorf("empty batch Ack: %v, want invalid", r)
	}
}

// TestPublicTwins: the types converted by value (PartitionStats,
// PartitionConfig, PartitionError) and the constants mirror the partition
// manager's.
func TestPublicTwins(t *testing.T) {
	_ = PartitionStats(partition.Stats{})          // compile-time: same fields
	_ = partition.Config(PartitionConfig{})        // compile-time: same fields
	_ = (*PartitionError)((*partition.Error)(nil)) // compile-time: same fields
	if NewConfig().Partition != PartitionConfig(partition.NewConfig()) {
		t.Error("NewConfig().Partition differs from the partition manager's defaults")
	}
	for ours, theirs := range map[AckResult]partition.AckResult{
		AckOK: partition.AckOK, AckDuplicate: partition.AckDuplicate, AckStale: partition.AckStale,
		AckUnknown: partition.AckUnknown, AckInvalid: partition.AckInvalid,
	} {
		if int(ours) != int(theirs) {
			t.Errorf("AckResult %v = %d, the partition manager's %d", ours, ours, theirs)
		}
	}
	if InitialOldest != partition.Oldest || InitialNewest != partition.Newest {
		t.Error("Initial* differ from the partition manager's")
	}
	err := publicErr(&partition.Error{Topic: "t", Op: "fetch", Err: partition.ErrFetch})
	var pe *PartitionError
	if !errors.As(err, &pe) || pe.Op != OpFetch || !errors.Is(err, ErrFetch) {
		t.Errorf("publicErr: %#v", err)
	}
	joined := publicErr(errors.Join(&partition.Error{Op: "commit", Err: partition.ErrLost}, errors.New("x")))
	if !errors.As(joined, &pe) || !errors.Is(joined, ErrLost) {
		t.Errorf("publicErr of a join: %#v", joined)
	}
}
