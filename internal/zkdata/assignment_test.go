package zkdata

import (
	"errors"
	"strings"
	"testing"
)

func TestGroupAssignmentRoundTrip(t *testing.T) {
	a := GroupAssignment{Digest: "d1", Members: []string{"a", "b"},
		Topics: map[string][]int32{"t": {0, 1, -1}, "u<&>": {1}}}
	data, err := a.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	want := `{"version":1,"digest":"d1","members":["a","b"],"topics":{"t":[0,1,-1],"u<&>":[1]}}`
	if string(data) != want {
		t.Fatalf("Marshal = %s, want %s", data, want)
	}
	got, err := ParseGroupAssignment(data)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		topic string
		p     int32
		want  string
	}{{"t", 0, "a"}, {"t", 1, "b"}, {"t", 2, ""}, {"t", 3, ""}, {"t", -1, ""}, {"u<&>", 0, "b"}, {"v", 0, ""}} {
		if o := got.Owner(c.topic, c.p); o != c.want {
			t.Errorf("Owner(%q, %d) = %q, want %q", c.topic, c.p, o, c.want)
		}
	}
	// Unknown fields are ignored.
	if _, err := ParseGroupAssignment([]byte(`{"version":1,"digest":"d","members":[],"topics":{},"later":true}`)); err != nil {
		t.Fatal(err)
	}
}

func TestGroupAssignmentMalformed(t *testing.T) {
	for _, c := range []struct {
		data, field string
	}{
		{``, ""},
		{`[1]`, ""},
		{`{"version":2,"digest":"d"}`, "version"},
		{`{"digest":"d"}`, "version"},
		{`{"version":1,"digest":""}`, "digest"},
		{`{"version":1,"digest":"d","members":["a",""]}`, "members[1]"},
		{`{"version":1,"digest":"d","members":["a","a"]}`, "members[1]"},
		{`{"version":1,"digest":"d","members":["a"],"topics":{"t":[0,1]}}`, `topics["t"][1]`},
		{`{"version":1,"digest":"d","members":["a"],"topics":{"t":[-2]}}`, `topics["t"][0]`},
		{`{"version":1,"digest":"d","members":["a"],"topics":{"t":["x"]}}`, "topics"},
	} {
		_, err := ParseGroupAssignment([]byte(c.data))
		var me *MalformedError
		if !errors.Is(err, ErrMalformed) || !errors.As(err, &me) {
			t.Errorf("%s: error %v, want a MalformedError", c.data, err)
			continue
		}
		if !strings.Contains(err.Error(), "group assignment") || (c.field != "" && !strings.HasPrefix(me.Field, c.field)) {
			t.Errorf("%s: %v (field %q), want it to name the group assignment and %q", c.data, err, me.Field, c.field)
		}
	}
	if _, err := (GroupAssignment{Members: []string{"a"}}).Marshal(); !errors.Is(err, ErrMalformed) {
		t.Errorf("Marshal without digest: %v, want ErrMalformed", err)
	}
}
