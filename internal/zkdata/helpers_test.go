package zkdata

import (
	"errors"
	"reflect"
	"strings"
	"testing"
)

// parsed is a case of wantParsed: data that parses to want.
type parsed[T any] struct {
	name, data string
	want       T
}

// wantParsed checks that parse reads each case's data as its want.
func wantParsed[T any](t *testing.T, parse func([]byte) (T, error), cases []parsed[T]) {
	t.Helper()
	for _, tt := range cases {
		got, err := parse([]byte(tt.data))
		if err != nil {
			t.Errorf("%s: %v", tt.name, err)
			continue
		}
		if !reflect.DeepEqual(got, tt.want) {
			t.Errorf("%s:\n got %+v\nwant %+v", tt.name, got, tt.want)
		}
	}
}

// malformedCase is a case of wantMalformed: data and a part of its error.
type malformedCase struct {
	data, want string
}

// wantMalformed checks that parse fails each case's data with a
// *MalformedError (matching ErrMalformed) whose text contains its want.
func wantMalformed(t *testing.T, parse func([]byte) error, cases []malformedCase) {
	t.Helper()
	for _, tt := range cases {
		err := parse([]byte(tt.data))
		var me *MalformedError
		if !errors.Is(err, ErrMalformed) || !errors.As(err, &me) || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("parse(%s) = %v, want *MalformedError containing %q", tt.data, err, tt.want)
		}
	}
}
