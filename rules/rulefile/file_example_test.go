package rulefile_test

import (
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"

	"github.com/sluicehq/sluice/rules"
	"github.com/sluicehq/sluice/rules/rulefile"
)

// Parse builds a Set from a rule file's content. Everything is checked
// here, once: an error names the file, the line, the rule and the field.
func ExampleParse() {
	const file = `
rules:
  - name: per-ip
    key: ip
    limit: {rate: 100, per: 1m}

  - name: per-api-key
    key: api_key
    plans: [free]
    limit: {rate: 20, per: 1m}

  - name: global
    key: global
    limit: {rate: 5000, per: 1m, burst: 500}
    on_fail: closed
`
	cfg := rulefile.LoadConfig{
		// The request's plan, as authentication would record it.
		Plan: func(r *http.Request) string { return r.Header.Get("X-Plan") },
	}
	set, err := rulefile.Parse("limits.yaml", []byte(file), cfg)
	if err != nil {
		panic(err)
	}
	for _, r := range set.Rules() {
		fmt.Printf("%-12s key=%-8s limit=%-16v on_fail=%v\n", r.Name, r.Key.Kind(), r.Limit, r.OnFail)
	}

	req := httptest.NewRequest("GET", "/", nil)
	req.Header.Set("X-API-Key", "k-123")
	req.Header.Set("X-Plan", "free")
	var m rules.Matched
	if err := set.Resolve(req, &m); err != nil {
		panic(err)
	}
	fmt.Println("a free-plan API key request matches", len(m.Rules), "rules")

	_, err = rulefile.Parse("limits.yaml", []byte("rules:\n  - name: per-ip\n    key: ip\n    limit: {rate: 100, per: 1m, burts: 200}\n"), cfg)
	fmt.Println(err)
	fmt.Println(errors.Is(err, rulefile.ErrInvalidFile))
	// Output:
	// per-ip       key=ip       limit=100/1m           on_fail=local
	// per-api-key  key=api_key  limit=20/1m            on_fail=local
	// global       key=global   limit=5000/1m burst 500 on_fail=closed
	// a free-plan API key request matches 3 rules
	// rulefile: limits.yaml:4: rule "per-ip": limit: unknown field "burts" (did you mean "burst"?)
	// true
}

// A Watcher keeps a file's rules current; pass it to the middleware where
// a *Set would go. Here the file is rewritten and reloaded at once; a
// watcher also polls it (every 5 s by default).
func ExampleWatch() {
	dir, err := os.MkdirTemp("", "sluice")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "rules.yaml")
	write := func(rate int) {
		content := fmt.Sprintf("rules:\n  - {name: per-ip, key: ip, limit: {rate: %d, per: 1m}}\n", rate)
		if err := os.WriteFile(path+".tmp", []byte(content), 0o644); err != nil {
			panic(err)
		}
		if err := os.Rename(path+".tmp", path); err != nil { // atomic replace
			panic(err)
		}
	}
	write(100)

	w, err := rulefile.Watch(path, rulefile.LoadConfig{}, rulefile.WatchConfig{
		Logger:  slog.New(slog.DiscardHandler),
		OnError: func(err error) { fmt.Println("refused:", errors.Is(err, rulefile.ErrInvalidFile)) },
	})
	if err != nil {
		panic(err)
	}
	defer w.Close()
	// limiter := middleware.Limit(store, w)
	fmt.Println(w.Current().Rules()[0].Limit)

	write(50)
	_ = w.Reload()
	fmt.Println(w.Current().Rules()[0].Limit)

	write(0) // invalid: the last good rules stay
	_ = w.Reload()
	fmt.Println(w.Current().Rules()[0].Limit)
	// Output:
	// 100/1m
	// 50/1m
	// refused: true
	// 50/1m
}
