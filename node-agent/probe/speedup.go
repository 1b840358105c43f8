package probe

// ComputeSpeedup compares the tmpfs target with the disk target. It returns nil unless there is
// exactly one of each: with two disks there is no single honest "tmpfs versus disk" figure.
func ComputeSpeedup(targets []TargetResult) *Speedup {
	tmpfs, disk, ok := tmpfsAndDisk(targets)
	if !ok {
		return nil
	}
	s := &Speedup{TmpfsTarget: tmpfs.Name, DiskTarget: disk.Name}
	if tmpfs.SequentialWrite != nil && disk.SequentialWrite != nil {
		s.SequentialWrite = FormatRatio(float64(tmpfs.SequentialWrite.FdatasyncBytesPerSecond),
			float64(disk.SequentialWrite.FdatasyncBytesPerSecond))
	}
	if tmpfs.ColdRead != nil && disk.ColdRead != nil {
		s.ColdRead = FormatRatio(float64(tmpfs.ColdRead.BytesPerSecond), float64(disk.ColdRead.BytesPerSecond))
	}
	if t, d, ok := smallestCommonChurn(tmpfs.FileChurn, disk.FileChurn); ok {
		s.SmallFiles = FormatRatio(float64(t.CreateFilesPerSecond), float64(d.CreateFilesPerSecond))
	}
	if tmpfs.Fdatasync != nil && disk.Fdatasync != nil {
		s.Fdatasync = FormatRatio(float64(disk.Fdatasync.P99Microseconds), float64(tmpfs.Fdatasync.P99Microseconds))
	}
	return s
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
