package manager

import (
	"fmt"
	"os"
	"strings"
	"testing"
)

// TestDocStatesHandOutTurns: the package doc names the turns of the
// merged stream as the code sets them.
func TestDocStatesHandOutTurns(t *testing.T) {
	raw, err := os.ReadFile("doc.go")
	if err != nil {
		t.Fatal(err)
	}
	doc := strings.Join(strings.Fields(strings.ReplaceAll(string(raw), "//", "")), " ")
	want := fmt.Sprintf("in ModeMerged at most %d partitions at a time hold a turn to hand out", handOutTurns)
	if !strings.Contains(doc, want) {
		t.Errorf("doc.go does not say %q", want)
	}
	o := newOutputs(&Config{Mode: ModeMerged})
	if o.turns == nil {
		t.Error("ModeMerged: no turns")
	}
	if o := newOutputs(&Config{Mode: ModePartitions}); o.turns != nil {
		t.Error("ModePartitions: turns, want none (each stream is a partition's own)")
	}
}
