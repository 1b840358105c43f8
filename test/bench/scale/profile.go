package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"
)

// heapProfile is the manager's heap profile taken when its resident set was highest.
type heapProfile struct {
	// File is the profile (pprof format), relative to the output directory.
	File string `json:"file"`
	// RSSMiB is the manager's resident set when the profile was taken; InuseMiB the live heap
	// the profile accounts for (as of the last collection before it).
	RSSMiB   float64 `json:"rssMiB"`
	InuseMiB float64 `json:"inuseMiB"`
	// Top are the functions holding the most live heap (inuse_space, by flat size).
	Top []profileEntry `json:"top"`
}

// profileEntry is one line of `go tool pprof -top`.
type profileEntry struct {
	Function string  `json:"function"`
	FlatMiB  float64 `json:"flatMiB"`
	FlatPct  float64 `json:"flatPercent"`
	CumMiB   float64 `json:"cumMiB"`
}

// profileTopEntries is how many functions the results keep.
const profileTopEntries = 15

// peakProfiler takes the manager's heap profile each time its resident set grows by a tenth above
// the highest seen at the last profile, so that the one kept is the one nearest the peak.
type peakProfiler struct {
	url    string
	pid    int
	cancel context.CancelFunc
	done   chan struct{}

	mu   sync.Mutex
	rss  float64
	last []byte
}

// startPeakProfiler samples the resident set of process pid every second and fetches the heap
// profile from the pprof endpoint at addr when it grew.
func startPeakProfiler(ctx context.Context, addr string, pid int) *peakProfiler {
	ctx, cancel := context.WithCancel(ctx)
	p := &peakProfiler{url: "http://" + addr + "/debug/pprof/heap", pid: pid, cancel: cancel, done: make(chan struct{})}
	go p.loop(ctx)
	return p
}

func (p *peakProfiler) loop(ctx context.Context) {
	defer close(p.done)
	for {
		p.sample(ctx)
		select {
		case <-ctx.Done():
			return
		case <-time.After(time.Second):
		}
	}
}

// sample profiles the heap when the resident set is a tenth above the last profile's.
func (p *peakProfiler) sample(ctx context.Context) {
	s, err := readProcStats(p.pid)
	p.mu.Lock()
	grown := err == nil && s.RSSMiB > 1.1*p.rss
	p.mu.Unlock()
	if !grown {
		return
	}
	b, err := fetch(ctx, p.url)
	if err != nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.rss, p.last = s.RSSMiB, b
}

// stop ends the sampling and saves the profile nearest the peak in dir as name, with its top
// entries; nil when none was taken.
func (p *peakProfiler) stop(dir, name string) (*heapProfile, error) {
	p.cancel()
	<-p.done
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.last == nil {
		return nil, nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, p.last, 0o644); err != nil {
		return nil, err
	}
	top, inuse, err := topOf(path)
	if err != nil {
		return nil, err
	}
	return &heapProfile{File: name, RSSMiB: p.rss, InuseMiB: inuse, Top: top}, nil
}

func fetch(ctx context.Context, url string) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, http.NoBody)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer func() { _ = resp.Body.Close() }()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	return io.ReadAll(resp.Body)
}

// topOf reads the profile at path with the Go toolchain's pprof, which the benchmark needs anyway
// to build the manager, and returns its top entries by live heap and the live heap in all.
func topOf(path string) ([]profileEntry, float64, error) {
	cmd := exec.Command("go", "tool", "pprof", "-top", "-sample_index=inuse_space", "-unit=MB",
		"-nodecount="+strconv.Itoa(profileTopEntries), path)
	out, err := cmd.Output()
	if err != nil {
		return nil, 0, fmt.Errorf("go tool pprof -top %s: %w", path, err)
	}
	return parseTop(out)
}

// parseTop parses `go tool pprof -top -unit=MB`: a header that ends with a line "Showing nodes
// accounting for X, Y% of Z total", then "flat flat% sum% cum cum%" and one line per function.
func parseTop(out []byte) ([]profileEntry, float64, error) {
	var entries []profileEntry
	total := 0.0
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if rest, ok := strings.CutPrefix(line, "Showing nodes accounting for "); ok {
			if i := strings.LastIndex(rest, " of "); i >= 0 {
				total = megabytes(strings.TrimSuffix(rest[i+4:], " total"))
			}
			continue
		}
		f := strings.Fields(line)
		if len(f) < 6 || !strings.HasSuffix(f[1], "%") || !strings.HasSuffix(f[0], "MB") {
			continue
		}
		pct, _ := strconv.ParseFloat(strings.TrimSuffix(f[1], "%"), 64)
		entries = append(entries, profileEntry{
			Function: strings.Join(f[5:], " "), FlatMiB: megabytes(f[0]), FlatPct: pct, CumMiB: megabytes(f[3]),
		})
	}
	return entries, total, sc.Err()
}

// megabytes converts pprof's "12.50MB" (pprof's MB are MiB) to a number.
func megabytes(s string) float64 {
	v, _ := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(s), "MB"), 64)
	return v
}
