package assign

import (
	"fmt"
	"reflect"
	"slices"
	"testing"
)

// decodeCase turns fuzz bytes into members and partitions. Byte 0: member
// count (mod 12). Per member two bytes: ID (mod 16, so duplicates occur) and
// subscription (bit 7 set: nil = everything; otherwise a bit mask over
// topics t0-t3; t4 exists but only nil members read it). The remaining bytes
// are partitions in triples: topic (mod 5), ID (int8), leader (int8).
func decodeCase(data []byte) ([]Member, []Partition) {
	next := func() (byte, bool) {
		if len(data) == 0 {
			return 0, false
		}
		b := data[0]
		data = data[1:]
		return b, true
	}
	n, _ := next()
	var members []Member
	for range int(n % 12) {
		id, ok1 := next()
		sub, ok2 := next()
		if !ok1 || !ok2 {
			break
		}
		m := Member{ID: fmt.Sprintf("m%d", id%16)}
		if sub&0x80 == 0 {
			m.Topics = []string{}
			for t := range 4 {
				if sub&(1<<t) != 0 {
					m.Topics = append(m.Topics, fmt.Sprintf("t%d", t))
				}
			}
		}
		members = append(members, m)
	}
	var ps []Partition
	for len(data) >= 3 {
		ps = append(ps, Partition{
			Topic:  fmt.Sprintf("t%d", data[0]%5),
			ID:     int32(int8(data[1])),
			Leader: int32(int8(data[2])),
		})
		data = data[3:]
	}
	return members, ps
}

func FuzzStrategies(f *testing.F) {
	f.Add([]byte{})
	f.Add([]byte{2, 1, 0x80, 2, 0x03, 0, 0, 1, 0, 1, 2, 1, 0, 0xff})
	f.Add([]byte{3, 1, 0x01, 1, 0x02, 5, 0x00, 0, 0, 0, 1, 0, 0, 4, 9, 9, 0, 0, 3})
	f.Add([]byte{11, 0, 0x80, 1, 0x80, 2, 0x80, 3, 0x80, 4, 0x80, 5, 0x80, 6, 0x80,
		7, 0x80, 8, 0x80, 9, 0x80, 10, 0x80, 0, 0x80, 1, 0, 0x80, 1, 1, 0x7f})
	f.Fuzz(func(t *testing.T, data []byte) {
		members, ps := decodeCase(data)
		revM, revP := slices.Clone(members), slices.Clone(ps)
		slices.Reverse(revM)
		slices.Reverse(revP)
		for _, s := range strategies {
			a := s.fn.Assign(members, ps)
			if msg := checkAssignment(members, ps, a); msg != "" {
				t.Fatalf("%s: %s", s.name, msg)
			}
			if b := s.fn.Assign(revM, revP); !reflect.DeepEqual(a, b) {
				t.Fatalf("%s: output depends on input order", s.name)
			}
		}
	})
}

// FuzzBalanced decodes members and partitions as FuzzStrategies does, sets
// partition i's Owner from claims[i] (mod 18: "m0"-"m15", "" or "gone"; ""
// past the end), and checks Balanced's promises: a valid assignment,
// independent of input order, balanced per class, moving exactly the
// minimum, idempotent, and the same from the intermediate state that
// steps[i] (mod 3: old owner, unowned, new owner) picks for each moving
// partition i.
func FuzzBalanced(f *testing.F) {
	f.Add([]byte{3, 1, 0x80, 2, 0x80, 3, 0x80, 0, 0, 1, 0, 1, 2, 0, 2, 1, 0, 3, 2}, []byte{1, 1, 1, 2}, []byte{0, 1, 2})
	f.Add([]byte{3, 1, 0x01, 1, 0x02, 5, 0x00, 0, 0, 0, 1, 0, 0, 4, 9, 9, 0, 0, 3}, []byte{5, 17, 1, 16}, []byte{2, 2})
	f.Add([]byte{2, 0, 0x80, 1, 0x03, 0, 0, 1, 0, 1, 1, 1, 0, 1, 1, 1, 1, 0, 2, 1}, []byte{0, 0, 0, 0, 0}, []byte{1})
	f.Fuzz(func(t *testing.T, data, claims, steps []byte) {
		members, ps := decodeCase(data)
		for i := range ps {
			ps[i].Owner = ""
			if i < len(claims) {
				switch o := claims[i] % 18; o {
				case 16:
				case 17:
					ps[i].Owner = "gone"
				default:
					ps[i].Owner = fmt.Sprintf("m%d", o)
				}
			}
		}
		a := Balanced().Assign(members, ps)
		if msg := checkAssignment(members, ps, a); msg != "" {
			t.Fatal(msg)
		}
		if b := Balanced().Assign(reversed(members), reversed(ps)); !reflect.DeepEqual(a, b) {
			t.Fatal("output depends on input order")
		}
		if msg := checkClassBalance(members, ps, a); msg != "" {
			t.Fatal(msg)
		}
		if got, want := moves(members, ps, a), minMoves(members, ps); got != want {
			t.Fatalf("moved %d, minimum %d", got, want)
		}
		if b := Balanced().Assign(members, withOwners(ps, a)); !reflect.DeepEqual(a, b) {
			t.Fatal("not idempotent")
		}
		base := dedupe(members, ps)
		owner := owners(a)
		mid := slices.Clone(base)
		for i := range mid {
			to := owner[mid[i].Topic][mid[i].ID]
			if to == "" || to == mid[i].Owner || i >= len(steps) {
				continue
			}
			switch steps[i] % 3 {
			case 1:
				mid[i].Owner = ""
			case 2:
				mid[i].Owner = to
			}
		}
		if b := Balanced().Assign(members, mid); !reflect.DeepEqual(a, b) {
			t.Fatalf("intermediate state gives another plan\nfrom %s\nmid  %s", renderOwners(base), renderOwners(mid))
		}
	})
}
