package probe

import (
	"strings"
	"testing"
	"time"
)

func TestDefaultOptionsStayWithinTheNodeBudget(t *testing.T) {
	o := DefaultOptions()
	if err := o.Validate(2); err != nil {
		t.Fatalf("the defaults do not validate for a tmpfs and a disk target: %v", err)
	}
	if total := 2 * o.WriteBytesPerTarget(); total > 2*GiB {
		t.Errorf("a default two-target run writes %d bytes, more than 2 GiB", total)
	}
	for _, s := range o.TempFiles {
		if bytes := s.FileBytes * int64(s.Files); bytes > 400*MiB {
			t.Errorf("the %d-byte temporary files write %d bytes on each filesystem, more than 400 MiB", s.FileBytes, bytes)
		}
	}
	if o.MaxDuration > time.Minute {
		t.Errorf("MaxDuration = %s, more than a minute", o.MaxDuration)
	}
	// Workload caps must leave room for two targets inside the deadline on a slow disk; a tmpfs
	// target runs its temporary-file workloads twice.
	perTarget := o.ColdReadMaxDuration + o.DirectWriteMaxDuration + o.FsyncMaxDuration + o.DeviceReadDuration +
		2*time.Duration(len(o.Churn))*o.ChurnMaxDuration + 2*time.Duration(len(o.TempFiles))*o.TempFileMaxDuration
	if 2*perTarget >= o.MaxDuration {
		t.Errorf("capped workloads alone take %s per target, too close to the %s deadline", perTarget, o.MaxDuration)
	}
	if err := o.Validate(3); err == nil {
		t.Error("a default run over three targets should exceed the 2 GiB budget")
	}
}

func TestOptionsFootprint(t *testing.T) {
	o := Options{
		SeqWriteBytes: 100, DirectWriteBytes: 40, FsyncWriteBytes: 10, FsyncSamples: 3,
		Churn:     []ChurnSize{{FileBytes: 5, Files: 10}, {FileBytes: 60, Files: 2}},
		TempFiles: []TempFileSize{{FileBytes: 7, Files: 3}, {FileBytes: 110, Files: 2}},
	}
	// The temporary files count twice: a tmpfs target writes them again with large pages.
	if got := o.WriteBytesPerTarget(); got != 100+40+30+50+120+2*(21+220) {
		t.Errorf("WriteBytesPerTarget = %d, want 822", got)
	}
	if got := o.PeakBytesPerTarget(); got != 120 {
		t.Errorf("PeakBytesPerTarget = %d, want 120 (the larger churn)", got)
	}
	// A temporary file is freed when it is closed: only one is there at a time.
	o.TempFiles = append(o.TempFiles, TempFileSize{FileBytes: 150, Files: 1})
	if got := o.PeakBytesPerTarget(); got != 150 {
		t.Errorf("PeakBytesPerTarget = %d, want 150 (the largest temporary file)", got)
	}
}

func TestValidateRejects(t *testing.T) {
	tests := []struct {
		name   string
		change func(o *Options)
		want   string
	}{
		{"zero sequential write", func(o *Options) { o.SeqWriteBytes = 0 }, "SeqWriteBytes must be positive"},
		{"unaligned O_DIRECT block", func(o *Options) { o.DirectWriteBlockBytes = 1000 }, "DirectWriteBlockBytes must be a positive multiple of 4096"},
		{"unaligned O_DIRECT total", func(o *Options) { o.DirectWriteBytes = 4097 }, "DirectWriteBytes must be a positive multiple of 4096"},
		{"no time limit", func(o *Options) { o.MaxDuration = 0 }, "MaxDuration must be positive"},
		{"negative churn cap", func(o *Options) { o.ChurnMaxDuration = -time.Second }, "ChurnMaxDuration must be positive"},
		{"empty churn file count", func(o *Options) { o.Churn = []ChurnSize{{FileBytes: 5000}} }, "churn workload 1 needs a positive file size and count"},
		{"huge block", func(o *Options) { o.SeqWriteBytes, o.SeqWriteBlockBytes = 2*GiB, 2*GiB }, "in-memory buffer limit"},
		{"over budget", func(o *Options) { o.MaxTotalWriteBytes = MiB }, "more than MaxTotalWriteBytes"},
		{"no fdatasync samples", func(o *Options) { o.FsyncSamples = 0 }, "FsyncSamples must be positive"},
		{"empty temporary-file count", func(o *Options) { o.TempFiles = []TempFileSize{{FileBytes: MiB}} }, "temporary-file workload 1 needs a positive file size and count"},
		{"a temporary-file size twice", func(o *Options) { o.TempFiles = []TempFileSize{{FileBytes: MiB, Files: 1}, {FileBytes: MiB, Files: 2}} },
			"temporary-file workload 2 repeats the file size 1048576 bytes"},
		{"no temporary-file block", func(o *Options) { o.TempFileBlockBytes = 0 }, "TempFileBlockBytes must be positive"},
		{"no temporary-file cap", func(o *Options) { o.TempFileMaxDuration = 0 }, "TempFileMaxDuration must be positive"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := DefaultOptions()
			tt.change(&o)
			err := o.Validate(1)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Validate() = %v, want an error containing %q", err, tt.want)
			}
		})
	}
}
