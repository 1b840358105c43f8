package decide

import (
	"fmt"
	"testing"
)

// TestSummarizeDescribesOnlyWhatItShows checks that a message over many targets names the first
// five, counts the others, and describes no more than it names.
func TestSummarizeDescribesOnlyWhatItShows(t *testing.T) {
	var fs []finding
	for i := range 7 {
		fs = append(fs, finding{target: fmt.Sprint("db-", i), message: "m"})
	}
	if got, want := summarize(fs), "db-0: m; db-1: m; db-2: m; db-3: m; db-4: m; and 2 more"; got != want {
		t.Errorf("summarize() = %q, want %q", got, want)
	}
	if got, want := summarize(fs[:2]), "db-0: m; db-1: m"; got != want {
		t.Errorf("summarize() = %q, want %q", got, want)
	}
	described := 0
	summarizeFirst(500, func(i int) string { described++; return "" })
	if described != 5 {
		t.Errorf("%d of 500 items described for a message that names 5", described)
	}
}
