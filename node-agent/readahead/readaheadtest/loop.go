package readaheadtest

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/dbtune/scratch-operator/node-agent/readahead"
	"github.com/dbtune/scratch-operator/test/testenv"
)

// RequireRoot skips the test unless it can create loop devices (root, /dev/loop-control), or
// fails it under the project's strict mode (testenv.StrictEnv), as in CI.
func RequireRoot(t testing.TB) {
	t.Helper()
	testenv.RequireRoot(t, "create loop devices")
	if _, err := os.Stat("/dev/loop-control"); err != nil {
		testenv.SkipOrFail(t, "needs /dev/loop-control to create loop devices: %v", err)
	}
}

// sysClassBlock lists every block device, partitions included.
const sysClassBlock = "/sys/class/block"

// waitTimeout bounds the polls for udev-less device nodes (devtmpfs creates them
// asynchronously) and for partitions to disappear after a detach.
const waitTimeout = 10 * time.Second

// LoopOptions describes the image behind a loop device.
type LoopOptions struct {
	// SizeBytes is the image size; 0 means 8 MiB.
	SizeBytes int64
	// Partitioned writes an MBR with one Linux partition from 1 MiB to the end, and attaches
	// with partition scanning, so the kernel creates <name>p1.
	Partitioned bool
}

// Loop is a loop device attached to a temporary image for one test.
type Loop struct {
	// Name is the kernel name (loop3).
	Name string
	// Dev is its device number.
	Dev readahead.DevNum
	// Partition is the first partition's kernel name (loop3p1) when the image is partitioned.
	Partition string
	// PartitionDev is the partition's device number.
	PartitionDev readahead.DevNum

	fd       int
	detached bool
	// foundSectors is the read-ahead the unattached device had. The kernel keeps a loop
	// device's read-ahead across detach and the next attach, so it is put back before detaching
	// to leave nothing behind for the next user of the device.
	foundSectors int
}

// ID returns the loop device's ID.
func (l *Loop) ID() readahead.DeviceID { return readahead.DeviceID{Name: l.Name, Dev: l.Dev} }

// PartitionID returns the partition's ID.
func (l *Loop) PartitionID() readahead.DeviceID {
	return readahead.DeviceID{Name: l.Partition, Dev: l.PartitionDev}
}

// AttachLoop attaches a loop device with pure ioctls (LOOP_CTL_GET_FREE, then LOOP_CONFIGURE,
// or LOOP_SET_FD and LOOP_SET_STATUS64 on kernels before 5.8) and detaches it when the test
// ends, failed or not. The device is also set to clear itself automatically when its last user
// closes it, so even a killed test process leaves nothing attached.
func AttachLoop(t testing.TB, opts LoopOptions) *Loop {
	t.Helper()
	RequireRoot(t)
	if opts.SizeBytes == 0 {
		opts.SizeBytes = 8 << 20
	}
	image, err := createImage(t.TempDir(), opts)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = image.Close() }()

	l, err := attach(image, opts.Partitioned)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := l.detach(); err != nil {
			t.Errorf("failed to detach %s: %v", l.Name, err)
		}
	})
	if opts.Partitioned {
		if err := l.ensurePartition(opts.SizeBytes); err != nil {
			t.Fatal(err)
		}
	}
	return l
}

func createImage(dir string, opts LoopOptions) (*os.File, error) {
	f, err := os.OpenFile(filepath.Join(dir, "disk.img"), os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return nil, err
	}
	if err := f.Truncate(opts.SizeBytes); err != nil {
		_ = f.Close()
		return nil, err
	}
	if opts.Partitioned {
		if _, err := f.WriteAt(masterBootRecord(opts.SizeBytes), 0); err != nil {
			_ = f.Close()
			return nil, err
		}
	}
	return f, nil
}

// partitionStartSector puts the partition at 1 MiB, where partitioning tools align it.
const partitionStartSector = 2048

// masterBootRecord is an MBR with one Linux (0x83) partition from sector 2048 to the end. The
// CHS fields hold the "beyond CHS" marker, since Linux reads only the LBA fields.
func masterBootRecord(sizeBytes int64) []byte {
	const start = partitionStartSector
	mbr := make([]byte, 512)
	e := mbr[446:462]
	copy(e[1:4], []byte{0xfe, 0xff, 0xff})
	e[4] = 0x83
	copy(e[5:8], []byte{0xfe, 0xff, 0xff})
	binary.LittleEndian.PutUint32(e[8:12], start)
	binary.LittleEndian.PutUint32(e[12:16], uint32(sizeBytes/512-start))
	mbr[510], mbr[511] = 0x55, 0xaa
	return mbr
}

func attach(image *os.File, partitioned bool) (*Loop, error) {
	ctl, err := os.OpenFile("/dev/loop-control", os.O_RDWR, 0)
	if err != nil {
		return nil, err
	}
	defer func() { _ = ctl.Close() }()
	// Another process can take the free device between LOOP_CTL_GET_FREE and the configure;
	// the configure then fails with EBUSY and the next free one is tried.
	for range 20 {
		n, err := unix.IoctlRetInt(int(ctl.Fd()), unix.LOOP_CTL_GET_FREE)
		if err != nil {
			return nil, fmt.Errorf("LOOP_CTL_GET_FREE: %w", err)
		}
		name := fmt.Sprintf("loop%d", n)
		fd, err := openWhenPresent("/dev/" + name)
		if err != nil {
			return nil, err
		}
		found, err := unix.IoctlGetInt(fd, unix.BLKRAGET)
		if err != nil {
			_ = unix.Close(fd)
			return nil, fmt.Errorf("BLKRAGET on /dev/%s: %w", name, err)
		}
		err = configure(fd, image, partitioned)
		if errors.Is(err, unix.EBUSY) {
			_ = unix.Close(fd)
			continue
		}
		if err != nil {
			_ = unix.Close(fd)
			return nil, fmt.Errorf("failed to attach %s to /dev/%s: %w", image.Name(), name, err)
		}
		l := &Loop{Name: name, fd: fd, foundSectors: found}
		var st unix.Stat_t
		if err := unix.Fstat(fd, &st); err != nil {
			return nil, errors.Join(err, l.detach())
		}
		l.Dev = readahead.DevNum{Major: unix.Major(st.Rdev), Minor: unix.Minor(st.Rdev)}
		return l, nil
	}
	return nil, errors.New("failed to find a free loop device after 20 tries")
}

func configure(fd int, image *os.File, partitioned bool) error {
	flags := uint32(unix.LO_FLAGS_AUTOCLEAR)
	if partitioned {
		flags |= unix.LO_FLAGS_PARTSCAN
	}
	cfg := unix.LoopConfig{Fd: uint32(image.Fd())}
	cfg.Info.Flags = flags
	copy(cfg.Info.File_name[:], image.Name())
	err := unix.IoctlLoopConfigure(fd, &cfg)
	if !errors.Is(err, unix.EINVAL) && !errors.Is(err, unix.ENOTTY) {
		return err
	}
	if err := unix.IoctlSetInt(fd, unix.LOOP_SET_FD, int(image.Fd())); err != nil {
		return err
	}
	if err := unix.IoctlLoopSetStatus64(fd, &cfg.Info); err != nil {
		return errors.Join(err, unix.IoctlSetInt(fd, unix.LOOP_CLR_FD, 0))
	}
	return nil
}

func openWhenPresent(node string) (int, error) {
	deadline := time.Now().Add(waitTimeout)
	for {
		fd, err := unix.Open(node, unix.O_RDWR|unix.O_CLOEXEC, 0)
		if err == nil || !errors.Is(err, unix.ENOENT) || time.Now().After(deadline) {
			return fd, err
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// ensurePartition makes sure partition 1 exists. The partition scan during LOOP_CONFIGURE finds
// the MBR on kernels with the msdos parser; kernels built without any partition table parser
// (some VM kernels) find nothing, so the partition is then added directly with BLKPG, as partx
// does.
func (l *Loop) ensurePartition(sizeBytes int64) error {
	l.Partition = l.Name + "p1"
	if _, err := os.Lstat(filepath.Join(sysClassBlock, l.Partition)); err != nil {
		const start = partitionStartSector * 512
		if err := addPartition(l.fd, start, sizeBytes-start); err != nil && !errors.Is(err, unix.EBUSY) {
			return fmt.Errorf("failed to add partition 1 to %s with BLKPG: %w", l.Name, err)
		}
	}
	return l.waitForPartition()
}

func addPartition(fd int, start, length int64) error {
	p := unix.BlkpgPartition{Start: start, Length: length, Pno: 1}
	arg := unix.BlkpgIoctlArg{
		Op:      unix.BLKPG_ADD_PARTITION,
		Datalen: int32(unsafe.Sizeof(p)),
		Data:    (*byte)(unsafe.Pointer(&p)),
	}
	_, _, errno := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), unix.BLKPG, uintptr(unsafe.Pointer(&arg)))
	runtime.KeepAlive(&p)
	if errno != 0 {
		return errno
	}
	return nil
}

func (l *Loop) waitForPartition() error {
	sysDev := filepath.Join(sysClassBlock, l.Partition, "dev")
	return poll(func() (bool, error) {
		raw, err := os.ReadFile(sysDev)
		if errors.Is(err, fs.ErrNotExist) {
			return false, nil
		}
		if err != nil {
			return false, err
		}
		if l.PartitionDev, err = readahead.ParseDevNum(strings.TrimSpace(string(raw))); err != nil {
			return false, err
		}
		_, err = os.Stat("/dev/" + l.Partition)
		return err == nil, nil
	}, "partition "+l.Partition+" to appear")
}

// Detach detaches the loop device now and waits until its partition is gone, for tests of
// devices that vanish. The cleanup then has nothing left to do.
func (l *Loop) Detach(t testing.TB) {
	t.Helper()
	if err := l.detach(); err != nil {
		t.Fatalf("failed to detach %s: %v", l.Name, err)
	}
	err := poll(func() (bool, error) {
		if l.Partition != "" {
			if _, err := os.Lstat(filepath.Join(sysClassBlock, l.Partition)); err == nil {
				return false, nil
			}
		}
		size, err := os.ReadFile(filepath.Join(sysClassBlock, l.Name, "size"))
		if errors.Is(err, fs.ErrNotExist) {
			return true, nil
		}
		if err != nil {
			return false, err
		}
		return strings.TrimSpace(string(size)) == "0", nil
	}, l.Name+" to be detached")
	if err != nil {
		t.Fatal(err)
	}
}

func (l *Loop) detach() error {
	if l.detached {
		return nil
	}
	l.detached = true
	restoreErr := unix.IoctlSetInt(l.fd, unix.BLKRASET, l.foundSectors)
	err := unix.IoctlSetInt(l.fd, unix.LOOP_CLR_FD, 0)
	if errors.Is(err, unix.ENXIO) {
		err = nil
	}
	return errors.Join(restoreErr, err, unix.Close(l.fd))
}

func poll(done func() (bool, error), what string) error {
	deadline := time.Now().Add(waitTimeout)
	for {
		ok, err := done()
		if err != nil || ok {
			return err
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("timed out after %s waiting for %s", waitTimeout, what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
