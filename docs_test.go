package sluice_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/store/memstore"
	"github.com/sluicehq/sluice/store/storetest"
)

// What a figure or a promise in the docs needs beside it, in the same
// paragraph, so that a reader knows when it holds.
var (
	// floodFigure is a cost per request of a flood: it depends on the rate
	// the flood offered (the calls are bounded per second, not per request).
	floodFigure = regexp.MustCompile(`(?i)\b(script calls|scripts) per (offered )?(request|check)`)
	// offeredRate is a rate offered: "167 requests a second", "12.2k
	// checks offered a second"; in a table, a column of them. A closed loop
	// flat out offers what its concurrency can send: "16 goroutines".
	// A figure not from a steady flood says how many requests each bucket
	// got instead: "10 requests each".
	offeredRate      = regexp.MustCompile(`\d[\d,.]*(k| thousand| million)? (requests|checks)( offered)? (a|per) second|\d[\d,]* requests each\b|\b\d+ goroutines\b`)
	offeredRateTable = regexp.MustCompile(`\| *[^|]*(requests|checks)( offered)? (a|per) second[^|]*\|`)
	// limitPromise is a promise of how many pass in a span of time: "at
	// most 10 a minute", "at most 10 in any minute".
	limitPromise = regexp.MustCompile(`(?i)\bat most [\d,]+\b[^.;:]{0,40}?\b(a|an|per|in any) (second|minute|hour|day)\b`)
	// algorithmNamed names how the limit is counted: its algorithm or its
	// burst.
	algorithmNamed = regexp.MustCompile(`(?i)token bucket|sliding log|sliding window|fixed window|burst|TokenBucket|SlidingLog|SlidingWindow|FixedWindow`)
)

// paragraph is a block of a document between blank lines, outside code
// blocks, joined into one line (each item of a list a block of its own); or
// a comment block of a Go file.
type paragraph struct {
	line  int // of its first line, 1-based
	text  string
	table bool
}

// listItem starts an item of a Markdown list.
var listItem = regexp.MustCompile(`^([-*]|\d+\.) `)

// mdParagraphs returns the paragraphs of a Markdown document, leaving out
// fenced code blocks.
func mdParagraphs(md string) []paragraph {
	var out []paragraph
	var cur []string
	start, fenced := 0, false
	flush := func() {
		if len(cur) > 0 {
			out = append(out, paragraph{line: start, text: strings.Join(cur, " "), table: strings.HasPrefix(cur[0], "|")})
		}
		cur = nil
	}
	for i, l := range strings.Split(md, "\n") {
		t := strings.TrimSpace(l)
		switch {
		case strings.HasPrefix(t, "```"):
			flush()
			fenced = !fenced
		case fenced:
		case t == "":
			flush()
		default:
			if listItem.MatchString(t) {
				flush()
			}
			if len(cur) == 0 {
				start = i + 1
			}
			cur = append(cur, t)
		}
	}
	flush()
	return out
}

// goCommentParagraphs returns the paragraphs of a Go file's comments: runs
// of // lines, split at an empty comment line.
func goCommentParagraphs(src string) []paragraph {
	var out []paragraph
	var cur []string
	start := 0
	flush := func() {
		if len(cur) > 0 {
			out = append(out, paragraph{line: start, text: strings.Join(cur, " ")})
		}
		cur = nil
	}
	for i, l := range strings.Split(src, "\n") {
		t := strings.TrimSpace(l)
		c, ok := strings.CutPrefix(t, "//")
		c = strings.TrimSpace(c)
		if !ok || c == "" {
			flush()
			continue
		}
		if len(cur) == 0 {
			start = i + 1
		}
		cur = append(cur, c)
	}
	flush()
	return out
}

// floodFiguresWithoutRate returns the paragraphs that quote a flood's
// cost per request without the rate offered: in the paragraph, or for a
// table in the table or the paragraph just before it (its caption).
func floodFiguresWithoutRate(ps []paragraph) []paragraph {
	var bad []paragraph
	for i, p := range ps {
		if !floodFigure.MatchString(p.text) || hasRate(p) {
			continue
		}
		if p.table && i > 0 && hasRate(ps[i-1]) {
			continue
		}
		bad = append(bad, p)
	}
	return bad
}

func hasRate(p paragraph) bool {
	return offeredRate.MatchString(p.text) || p.table && offeredRateTable.MatchString(p.text)
}

// promisesWithoutAlgorithm returns the paragraphs that promise at most so
// many in a span of time without naming the algorithm or the burst that
// keeps the promise.
func promisesWithoutAlgorithm(ps []paragraph) []paragraph {
	var bad []paragraph
	for _, p := range ps {
		if limitPromise.MatchString(p.text) && !algorithmNamed.MatchString(p.text) {
			bad = append(bad, p)
		}
	}
	return bad
}

// docFiles returns the Markdown documents: README.md, BENCHMARKS.md and
// docs/*.md.
func docFiles(t *testing.T) []string {
	t.Helper()
	docs, err := filepath.Glob(filepath.Join("docs", "*.md"))
	if err != nil || len(docs) == 0 {
		t.Fatalf("docs/*.md: %v, %d files", err, len(docs))
	}
	return append([]string{"README.md", "BENCHMARKS.md"}, docs...)
}

// goDocFiles returns the Go files whose comments are documentation users
// read: every doc.go and the examples' programs.
func goDocFiles(t *testing.T) []string {
	t.Helper()
	var files []string
	err := filepath.WalkDir(".", func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if name := d.Name(); path != "." && (strings.HasPrefix(name, ".") || name == "testdata") {
				return filepath.SkipDir
			}
			return nil
		}
		name := d.Name()
		if name == "doc.go" || strings.HasPrefix(path, "examples"+string(filepath.Separator)) && strings.HasSuffix(name, ".go") && !strings.HasSuffix(name, "_test.go") {
			files = append(files, path)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

// clip returns the first 120 characters of s.
func clip(s string) string {
	if r := []rune(s); len(r) > 120 {
		return string(r[:120]) + "…"
	}
	return s
}

func read(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestDocsFloodFiguresNameTheirRate: every figure of what a flood costs per
// request ("0.0013 script calls per request") says, in its paragraph, the
// rate the flood offered: the store's calls are bounded per second, so the
// same store costs 0.05 per request at 167 requests a second and 0.0013 at
// 12,000.
func TestDocsFloodFiguresNameTheirRate(t *testing.T) {
	for _, name := range docFiles(t) {
		for _, p := range floodFiguresWithoutRate(mdParagraphs(read(t, name))) {
			t.Errorf("%s:%d: a flood's cost per request without the rate offered (\"N requests a second\") in its paragraph: %s", name, p.line, clip(p.text))
		}
	}
}

// TestDocsLimitPromisesNameTheAlgorithm: a promise of at most so many in a
// span ("at most 10 a minute") names the algorithm or the burst that keeps
// it, in its paragraph: a token bucket of 10 a minute lets 19 through
// within a minute.
func TestDocsLimitPromisesNameTheAlgorithm(t *testing.T) {
	for _, name := range docFiles(t) {
		for _, p := range promisesWithoutAlgorithm(mdParagraphs(read(t, name))) {
			t.Errorf("%s:%d: a promise of at most so many in a span that names no algorithm or burst: %s", name, p.line, clip(p.text))
		}
	}
	for _, name := range goDocFiles(t) {
		for _, p := range promisesWithoutAlgorithm(goCommentParagraphs(read(t, name))) {
			t.Errorf("%s:%d: a promise of at most so many in a span that names no algorithm or burst: %s", name, p.line, clip(p.text))
		}
	}
}

// maxInSpan floods a fresh bucket of limit, counted by alg, with a request
// every step for three spans of span, and returns the most it admitted in
// any span.
func maxInSpan(t *testing.T, limit sluice.Limit, alg sluice.Algorithm, span, step time.Duration) int {
	t.Helper()
	clock := storetest.NewClock(time.Unix(1_700_000_000, 0))
	store := memstore.New(memstore.Config{Clock: clock})
	defer store.Close(context.Background())
	l, err := sluice.NewLimiter(store, limit, sluice.WithAlgorithm(alg))
	if err != nil {
		t.Fatal(err)
	}
	var admitted []time.Time
	for end := clock.Now().Add(3 * span); clock.Now().Before(end); clock.Advance(step) {
		r, err := l.Allow(context.Background(), "k")
		if err != nil {
			t.Fatal(err)
		}
		if r.Allowed {
			admitted = append(admitted, clock.Now())
		}
	}
	most := 0
	for i, j := 0, 0; j < len(admitted); j++ {
		for admitted[j].Sub(admitted[i]) >= span {
			i++
		}
		most = max(most, j-i+1)
	}
	return most
}

// TestQuickstartPromisesHold measures what the quickstarts say their
// limits let through, and checks that they say it: a flood of one request
// every 10 ms, the most admitted within any span of the limit's period.
func TestQuickstartPromisesHold(t *testing.T) {
	cases := []struct {
		limit sluice.Limit
		alg   sluice.Algorithm
		want  int
		file  string // where it is said
		says  string
	}{
		{sluice.PerMinute(10), sluice.TokenBucket, 19, "examples/quickstart/limiter/main.go", "up to 19 within a minute"},
		{sluice.PerMinute(10).WithBurst(1), sluice.TokenBucket, 10, "examples/quickstart/limiter/main.go", "For at most 10 in any minute, use sluice.PerMinute(10).WithBurst(1)"},
		{sluice.PerMinute(10), sluice.SlidingLog, 10, "examples/quickstart/limiter/main.go", "sluice.WithAlgorithm(sluice.SlidingLog)"},
		{sluice.PerMinute(100), sluice.TokenBucket, 199, "README.md", "then one every 0.6 s, so up to 199 within a minute"},
		{sluice.PerMinute(10), sluice.TokenBucket, 19, "docs/rules.md", "`PerMinute(10)` lets 19 through within a minute"},
		{sluice.PerMinute(10), sluice.SlidingLog, 10, "docs/rules.md", "never more than `Rate` within any `Period`"},
	}
	for _, tc := range cases {
		t.Run(fmt.Sprintf("%v %v in %s", tc.limit, tc.alg, tc.file), func(t *testing.T) {
			if got := maxInSpan(t, tc.limit, tc.alg, tc.limit.Period, 10*time.Millisecond); got != tc.want {
				t.Errorf("%v counted by %v admits up to %d within a period, not %d", tc.limit, tc.alg, got, tc.want)
			}
			text := strings.Join(strings.Fields(strings.NewReplacer("// ", " ", "//", " ").Replace(read(t, tc.file))), " ")
			if !strings.Contains(text, tc.says) {
				t.Errorf("%s does not say %q", tc.file, tc.says)
			}
		})
	}
}

// The checks catch what they are for, in the docs as they were.
func TestDocsChecksFindMissingConditions(t *testing.T) {
	cases := []struct {
		name, md string
		flood    bool // a flood figure without its rate
		promise  bool // a promise without its algorithm
	}{
		{"flood figure alone", "One client flooding four instances for 5 s cost 0.0013\nscript calls per request offered (1.00 without the memory).\n", true, false},
		{"flood figure with its rate", "At 167 requests a second offered, 0.050 script calls per request.\n", false, false},
		{"rate in another paragraph", "At 167 requests a second.\n\nIt cost 0.050 script calls per request.\n", true, false},
		{"rate in another list item", "- At 167 requests a second.\n- It cost 0.050 script calls per request.\n", true, false},
		{"table with its rate after it", "Flat out:\n\n| store | script calls per check |\n| --- | --- |\n| a | 0.1 |\n\nAt 12,000 requests a second.\n", true, false},
		{"table with a rate column", "| offered | script calls per offered request |\n| --- | --- |\n| 167 requests a second | 0.05 |\n", false, false},
		{"table with its rate in the caption", "Flat out, 12,000 requests a second:\n\n| store | script calls per check |\n| --- | --- |\n| a | 0.1 |\n", false, false},
		{"table without a rate", "Flat out:\n\n| store | script calls per check |\n| --- | --- |\n| a | 0.1 |\n", true, false},
		{"flood figure in a code block", "```\n0.1 script calls per request\n```\n", false, false},
		{"promise alone", "Runs export jobs at most 10 a minute per tenant, without HTTP.\n", false, true},
		{"promise in any minute", "At most 10 in any minute.\n", false, true},
		{"promise with its algorithm", "The token bucket lets 19 through; at most 10 in any minute with a burst of 1.\n", false, false},
		{"a cap that is no promise", "Memory is capped at most 1,000 entries.\n", false, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ps := mdParagraphs(tc.md)
			if got := len(floodFiguresWithoutRate(ps)) > 0; got != tc.flood {
				t.Errorf("flood figure without its rate: %v, want %v", got, tc.flood)
			}
			if got := len(promisesWithoutAlgorithm(ps)) > 0; got != tc.promise {
				t.Errorf("promise without its algorithm: %v, want %v", got, tc.promise)
			}
		})
	}
	src := "// Command limiter runs export jobs at most 10 a minute per tenant, without\n// HTTP.\npackage main\n"
	if len(promisesWithoutAlgorithm(goCommentParagraphs(src))) != 1 {
		t.Error("a Go comment's promise without its algorithm is not found")
	}
}
