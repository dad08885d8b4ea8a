package zkdata

import (
	"bytes"
	"encoding/json"
	"strconv"
)

// GroupAssignmentVersion is the only version of GroupAssignment known.
const GroupAssignmentVersion = 1

// GroupAssignment is the data of /consumers/<group>/assignment: the
// assignment one member computed, with a digest of what it was computed
// from, so that every member computes the next assignment from the same
// previous one. It is a plain value; Marshal and ParseGroupAssignment are
// pure, safe for concurrent use, and do not block.
//
//	{"version":1,"digest":"…","members":["a","b"],"topics":{"t":[0,1,-1]}}
//
// Topics gives, per topic, each partition's member as an index into
// Members (-1: nobody).
type GroupAssignment struct {
	Version int
	Digest  string
	Members []string
	Topics  map[string][]int32
}

type assignmentJSON struct {
	Version int                `json:"version"`
	Digest  string             `json:"digest"`
	Members []string           `json:"members"`
	Topics  map[string][]int32 `json:"topics"`
}

// Marshal encodes a (version 0 is written as GroupAssignmentVersion). It
// rejects what ParseGroupAssignment would reject, with an error wrapping
// ErrMalformed.
func (a GroupAssignment) Marshal() ([]byte, error) {
	if a.Version == 0 {
		a.Version = GroupAssignmentVersion
	}
	if err := a.check(); err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(assignmentJSON(a)); err != nil {
		e := malformed("group assignment", "", "", err.Error())
		e.Err = err
		return nil, e
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

// ParseGroupAssignment decodes an assignment node. The version must be
// GroupAssignmentVersion, the digest non-empty, the members non-empty and
// distinct, and every index -1 or a member's. Unknown fields are ignored.
// Errors wrap ErrMalformed and name the field.
func ParseGroupAssignment(data []byte) (GroupAssignment, error) {
	var raw assignmentJSON
	if err := decodeObject("group assignment", data, &raw); err != nil {
		return GroupAssignment{}, err
	}
	a := GroupAssignment(raw)
	if err := a.check(); err != nil {
		return GroupAssignment{}, err
	}
	return a, nil
}

func (a GroupAssignment) check() error {
	const node = "group assignment"
	switch {
	case a.Version != GroupAssignmentVersion:
		return malformed(node, "version", strconv.Itoa(a.Version), "not "+strconv.Itoa(GroupAssignmentVersion))
	case a.Digest == "":
		return malformed(node, "digest", "", "empty")
	}
	seen := make(map[string]bool, len(a.Members))
	for i, m := range a.Members {
		switch {
		case m == "":
			return malformed(node, "members["+strconv.Itoa(i)+"]", "", "empty")
		case seen[m]:
			return malformed(node, "members["+strconv.Itoa(i)+"]", m, "repeated")
		}
		seen[m] = true
	}
	for t, ps := range a.Topics {
		for p, m := range ps {
			if m < -1 || int(m) >= len(a.Members) {
				return malformed(node, "topics["+strconv.Quote(t)+"]["+strconv.Itoa(p)+"]",
					strconv.Itoa(int(m)), "not -1 or a member's index")
			}
		}
	}
	return nil
}

// Owner returns the member a gives partition p of topic ("" nobody).
func (a GroupAssignment) Owner(topic string, p int32) string {
	ps := a.Topics[topic]
	if p < 0 || int(p) >= len(ps) || ps[p] < 0 {
		return ""
	}
	return a.Members[ps[p]]
}
