package probe

import "time"

// ComputeComparison sets the tmpfs target beside the disk target. It returns nil unless there is
// exactly one of each: with two disks there is no single honest "tmpfs versus disk" figure.
//
// It compares only what temporary files do on both sides. The write compares the buffered rates:
// sort files and temporary tables are written and deleted, never synced. fdatasync is not compared
// at all: on tmpfs it returns at once, so a ratio against it would only restate the disk's latency
// in microseconds; the disk's own fdatasync figures are what tell its cost. The temporary-file
// ratios set both of the tmpfs's variants, as mounted and with large pages, beside the disk.
func ComputeComparison(targets []TargetResult) *Comparison {
	tmpfs, disk, ok := tmpfsAndDisk(targets)
	if !ok {
		return nil
	}
	c := &Comparison{TmpfsTarget: tmpfs.Name, DiskTarget: disk.Name}
	if tmpfs.SequentialWrite != nil && disk.SequentialWrite != nil {
		c.BufferedWriteRatio = FormatRatio(float64(tmpfs.SequentialWrite.BufferedBytesPerSecond),
			float64(disk.SequentialWrite.BufferedBytesPerSecond))
	}
	if tmpfs.ColdRead != nil && disk.ColdRead != nil {
		c.ColdReadRatio = FormatRatio(float64(tmpfs.ColdRead.BytesPerSecond), float64(disk.ColdRead.BytesPerSecond))
	}
	if t, d, ok := smallestCommonChurn(tmpfs.FileChurn, disk.FileChurn); ok {
		c.SmallFileCreateRatio = FormatRatio(float64(t.CreateFilesPerSecond), float64(d.CreateFilesPerSecond))
		if c.SmallFileCreateRatio != "" {
			c.SmallFileSizeBytes = t.FileSizeBytes
		}
	}
	c.TempFileRatio = TempFileRatio(tmpfs.TempFiles, disk.TempFiles)
	c.LargePageTempFileRatio = TempFileRatio(tmpfs.LargePageTempFiles, disk.TempFiles)
	return c
}

// TempFileRatio compares two sets of temporary-file results over the file sizes both measured:
// the rate of each side is its bytes over its time, summed over those sizes, so that a size with
// more bytes weighs more, as it does in a server's work. It is "" when no size was measured on both.
func TempFileRatio(num, den []TempFileResult) string {
	a, b := make([]TempFileResult, 0, len(num)), make([]TempFileResult, 0, len(num))
	for _, x := range num {
		for _, y := range den {
			if x.FileSizeBytes == y.FileSizeBytes && tempFileMeasured(x) && tempFileMeasured(y) {
				a, b = append(a, x), append(b, y)
			}
		}
	}
	return FormatRatio(float64(TempFileRate(a)), float64(TempFileRate(b)))
}

// TempFileRate is the bytes written over the time taken, summed over the results that carry a
// figure, in bytes per second; 0 when none does.
func TempFileRate(results []TempFileResult) int64 {
	var bytes, micros int64
	for _, r := range results {
		if tempFileMeasured(r) {
			bytes += r.FileSizeBytes * int64(r.Files)
			micros += r.ElapsedMicroseconds
		}
	}
	return PerSecond(bytes, time.Duration(micros)*time.Microsecond)
}

func tempFileMeasured(r TempFileResult) bool {
	return r.Unsupported == "" && r.Files > 0 && r.ElapsedMicroseconds > 0
}

func tmpfsAndDisk(targets []TargetResult) (tmpfs, disk *TargetResult, ok bool) {
	for i := range targets {
		switch targets[i].Kind {
		case KindTmpfs:
			if tmpfs != nil {
				return nil, nil, false
			}
			tmpfs = &targets[i]
		case KindDisk:
			if disk != nil {
				return nil, nil, false
			}
			disk = &targets[i]
		}
	}
	return tmpfs, disk, tmpfs != nil && disk != nil
}

// smallestCommonChurn finds the smallest file size measured on both sides, so that the ratio never
// compares 5000-byte files with 5 MB ones.
func smallestCommonChurn(a, b []FileChurnResult) (FileChurnResult, FileChurnResult, bool) {
	var bestA, bestB FileChurnResult
	found := false
	for _, x := range a {
		for _, y := range b {
			if x.FileSizeBytes == y.FileSizeBytes && (!found || x.FileSizeBytes < bestA.FileSizeBytes) {
				bestA, bestB, found = x, y, true
			}
		}
	}
	return bestA, bestB, found
}
