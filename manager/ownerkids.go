package manager

import (
	"iter"
	"math/bits"
	"strconv"
)

// ownerKids is one topic's owner nodes: each child of the topic's owners
// node by name, with its owner (a partition node's text; "" for a child
// that is not a partition's). A partition's node, named as Kafka's
// consumers name it ("7"), below the topic's partition count has a slot
// in a slice indexed by partition: 16 bytes (the owners are interned) and
// a bit, where a map of name to owner took about 80 bytes a partition.
// Any other child (a partition beyond the count, a stray node) is kept in
// a map. Its zero value is empty, with no slots.
type ownerKids struct {
	owner  []string // by partition
	has    []uint64 // a bit per slot: the node exists
	n      int      // children
	others map[string]string
}

// newOwnerKids returns an empty ownerKids with slots for partitions 0 to
// count-1.
func newOwnerKids(count int) ownerKids {
	return ownerKids{owner: make([]string, count), has: make([]uint64, (count+63)/64)}
}

// partitionName returns the partition a child of a topic's owners node
// stands for: ok when its name is a partition number as Kafka writes it
// (decimal, no sign, no leading zero).
func partitionName(k string) (p int32, ok bool) {
	if k == "" || len(k) > 10 || (k[0] == '0' && len(k) > 1) {
		return 0, false
	}
	for i := range len(k) {
		if k[i] < '0' || k[i] > '9' {
			return 0, false
		}
	}
	n, err := strconv.ParseInt(k, 10, 32)
	return int32(n), err == nil
}

// slot returns the slot of the child named k, if it has one.
func (o *ownerKids) slot(k string) (int, bool) {
	p, ok := partitionName(k)
	if !ok || int(p) >= len(o.owner) {
		return 0, false
	}
	return int(p), true
}

func (o *ownerKids) present(i int) bool { return o.has[i/64]&(1<<(i%64)) != 0 }

// get returns the owner of the child named k and whether it exists.
func (o *ownerKids) get(k string) (string, bool) {
	if i, ok := o.slot(k); ok {
		return o.owner[i], o.present(i)
	}
	owner, ok := o.others[k]
	return owner, ok
}

// set records the child named k with owner.
func (o *ownerKids) set(k, owner string) {
	if i, ok := o.slot(k); ok {
		if !o.present(i) {
			o.n++
			o.has[i/64] |= 1 << (i % 64)
		}
		o.owner[i] = owner
		return
	}
	if o.others == nil {
		o.others = map[string]string{}
	}
	if _, had := o.others[k]; !had {
		o.n++
	}
	o.others[k] = owner
}

// del forgets the child named k.
func (o *ownerKids) del(k string) {
	if i, ok := o.slot(k); ok {
		if o.present(i) {
			o.n--
			o.has[i/64] &^= 1 << (i % 64)
			o.owner[i] = ""
		}
		return
	}
	if _, had := o.others[k]; had {
		o.n--
		delete(o.others, k)
	}
}

// len returns the number of children.
func (o *ownerKids) len() int { return o.n }

// partition returns the owner of partition p's node and whether it
// exists.
func (o *ownerKids) partition(p int32) (string, bool) {
	if p >= 0 && int(p) < len(o.owner) {
		return o.owner[p], o.present(int(p))
	}
	owner, ok := o.others[strconv.Itoa(int(p))]
	return owner, ok
}

// partitions yields every partition that has a node, with its owner: the
// slots in order, then the others in no order.
func (o *ownerKids) partitions() iter.Seq2[int32, string] {
	return func(yield func(int32, string) bool) {
		for i, w := range o.has {
			for ; w != 0; w &= w - 1 {
				p := i*64 + bits.TrailingZeros64(w)
				if !yield(int32(p), o.owner[p]) {
					return
				}
			}
		}
		for k, owner := range o.others {
			if p, ok := partitionName(k); ok {
				if !yield(p, owner) {
					return
				}
			}
		}
	}
}
