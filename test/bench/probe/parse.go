package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// FioResult is what the benchmark reads from one fio job's JSON output.
type FioResult struct {
	// ReadBytesPerSecond and WriteBytesPerSecond are fio's bw_bytes: bytes moved over the job's
	// runtime, which fio counts in whole milliseconds and which includes an --end_fsync.
	ReadBytesPerSecond  float64 `json:"readBytesPerSecond,omitempty"`
	WriteBytesPerSecond float64 `json:"writeBytesPerSecond,omitempty"`
	ReadBytes           int64   `json:"readBytes,omitempty"`
	WriteBytes          int64   `json:"writeBytes,omitempty"`
	// SyncSamples, SyncP50Nanoseconds and SyncP99Nanoseconds describe the latency of the
	// fdatasync calls alone (fio's sync.lat_ns), not of the writes before them.
	SyncSamples        int64   `json:"syncSamples,omitempty"`
	SyncP50Nanoseconds float64 `json:"syncP50Nanoseconds,omitempty"`
	SyncP99Nanoseconds float64 `json:"syncP99Nanoseconds,omitempty"`
}

type fioOutput struct {
	Jobs []struct {
		Name  string       `json:"jobname"`
		Error int          `json:"error"`
		Read  fioDirection `json:"read"`
		Write fioDirection `json:"write"`
		Sync  struct {
			Lat fioLatency `json:"lat_ns"`
		} `json:"sync"`
	} `json:"jobs"`
}

type fioDirection struct {
	IOBytes int64   `json:"io_bytes"`
	BW      float64 `json:"bw_bytes"`
}

type fioLatency struct {
	N          int64              `json:"N"`
	Percentile map[string]float64 `json:"percentile"`
}

// ParseFio reads the JSON fio writes with --output-format=json. fio may print warnings before the
// JSON document when both go to the same stream, so everything before the first brace is skipped.
func ParseFio(out []byte) (FioResult, error) {
	start := bytes.IndexByte(out, '{')
	if start < 0 {
		return FioResult{}, errors.New("no JSON document in fio's output")
	}
	var doc fioOutput
	if err := json.Unmarshal(out[start:], &doc); err != nil {
		return FioResult{}, fmt.Errorf("failed to parse fio's JSON output: %w", err)
	}
	if len(doc.Jobs) != 1 {
		return FioResult{}, fmt.Errorf("fio reported %d jobs, want exactly 1", len(doc.Jobs))
	}
	job := doc.Jobs[0]
	if job.Error != 0 {
		return FioResult{}, fmt.Errorf("fio job %s failed with error %d", job.Name, job.Error)
	}
	res := FioResult{
		ReadBytesPerSecond: job.Read.BW, WriteBytesPerSecond: job.Write.BW,
		ReadBytes: job.Read.IOBytes, WriteBytes: job.Write.IOBytes,
		SyncSamples: job.Sync.Lat.N,
	}
	if job.Sync.Lat.N > 0 {
		var err50, err99 error
		res.SyncP50Nanoseconds, err50 = percentile(job.Sync.Lat.Percentile, 50)
		res.SyncP99Nanoseconds, err99 = percentile(job.Sync.Lat.Percentile, 99)
		if err := errors.Join(err50, err99); err != nil {
			return FioResult{}, err
		}
	}
	return res, nil
}

// percentile finds p in fio's percentile map, whose keys are formatted floats ("99.000000"); they
// are compared as numbers so that a change of fio's formatting does not lose them.
func percentile(m map[string]float64, p float64) (float64, error) {
	for k, v := range m {
		if f, err := strconv.ParseFloat(k, 64); err == nil && f == p {
			return v, nil
		}
	}
	return 0, fmt.Errorf("fio reported no %g%% sync latency percentile (run it with --percentile_list=50:99)", p)
}

// ddSummary matches the last line dd writes under the C locale:
// "268435456 bytes (268 MB, 256 MiB) copied, 0.373641 s, 718 MB/s".
var ddSummary = regexp.MustCompile(`(?m)^(\d+) bytes .*copied, ([0-9.]+(?:e[-+]?\d+)?) s,`)

// ParseDD returns the bytes dd copied and the rate computed from its exact byte count and seconds,
// rather than from the rounded rate it prints.
func ParseDD(stderr string) (bytesCopied int64, bytesPerSecond float64, err error) {
	m := ddSummary.FindAllStringSubmatch(stderr, -1)
	if len(m) == 0 {
		return 0, 0, fmt.Errorf("no transfer summary in dd's output %q", strings.TrimSpace(stderr))
	}
	last := m[len(m)-1]
	n, err1 := strconv.ParseInt(last[1], 10, 64)
	secs, err2 := strconv.ParseFloat(last[2], 64)
	if err := errors.Join(err1, err2); err != nil {
		return 0, 0, fmt.Errorf("failed to parse dd's summary %q: %w", last[0], err)
	}
	if secs <= 0 {
		return n, 0, fmt.Errorf("dd reported %s seconds", last[2])
	}
	return n, float64(n) / secs, nil
}

// hdparmTiming matches "Timing buffered disk reads: 1024 MB in  1.35 seconds = 756.76 MB/sec".
var hdparmTiming = regexp.MustCompile(`Timing (?:buffered|O_DIRECT) disk reads:\s*(\d+) MB in\s*([0-9.]+) seconds\s*=\s*([0-9.]+) ([kM])B/sec`)

// ParseHdparm returns the rate of `hdparm -t`. hdparm counts in units of 2^20 bytes (its MB) and
// switches to kB/sec below 1 MB/sec; the printed rate has more significant digits than the printed
// seconds, so it is the figure used.
func ParseHdparm(stdout string) (bytesRead int64, bytesPerSecond float64, err error) {
	m := hdparmTiming.FindStringSubmatch(stdout)
	if m == nil {
		return 0, 0, fmt.Errorf("no timing line in hdparm's output %q", strings.TrimSpace(stdout))
	}
	mb, err1 := strconv.ParseInt(m[1], 10, 64)
	rate, err2 := strconv.ParseFloat(m[3], 64)
	if err := errors.Join(err1, err2); err != nil {
		return 0, 0, fmt.Errorf("failed to parse hdparm's timing %q: %w", m[0], err)
	}
	unit := float64(1 << 20)
	if m[4] == "k" {
		unit = 1 << 10
	}
	return mb << 20, rate * unit, nil
}
