package readaheadtest

import (
	"fmt"
	"sync"
	"syscall"

	"github.com/dbtune/scratch-operator/node-agent/readahead"
)

// FakeHost is an in-memory readahead.Host that behaves like the kernel where callers can tell:
// it keeps whole pages (readahead.KernelKiB), checks device numbers, reports a removed device
// the way a vanished one is reported, and fails on demand with the errors the real hosts return.
type FakeHost struct {
	mu       sync.Mutex
	devices  map[string]fakeDevice
	failures map[string]error
	sets     []SetCall

	// BeforeSet, when not nil, runs before every SetReadAhead takes effect, for example to check
	// that the original was saved before the first write.
	BeforeSet func(id readahead.DeviceID, kib int64)
}

type fakeDevice struct {
	dev readahead.DevNum
	kib int64
}

// SetCall is one SetReadAhead that reached the fake.
type SetCall struct {
	Device readahead.DeviceID
	KiB    int64
}

// NewFakeHost returns a FakeHost without devices.
func NewFakeHost() *FakeHost {
	return &FakeHost{devices: map[string]fakeDevice{}, failures: map[string]error{}}
}

// AddDevice adds (or replaces) a device with a read-ahead in KiB.
func (f *FakeHost) AddDevice(id readahead.DeviceID, kib int64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.devices[id.Name] = fakeDevice{dev: id.Dev, kib: readahead.KernelKiB(kib)}
}

// RemoveDevice makes a device vanish.
func (f *FakeHost) RemoveDevice(name string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.devices, name)
}

// FailSets makes SetReadAhead on a device fail with err, typically an errno such as
// syscall.EACCES (no CAP_SYS_ADMIN) or syscall.EROFS (read-only /sys); nil clears it.
func (f *FakeHost) FailSets(name string, err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err == nil {
		delete(f.failures, name)
		return
	}
	f.failures[name] = err
}

// Value returns a device's read-ahead in KiB.
func (f *FakeHost) Value(name string) (int64, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	d, ok := f.devices[name]
	return d.kib, ok
}

// Sets returns every SetReadAhead call that reached the fake, failed ones included.
func (f *FakeHost) Sets() []SetCall {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]SetCall(nil), f.sets...)
}

// ReadAhead returns the device's read-ahead in KiB.
func (f *FakeHost) ReadAhead(id readahead.DeviceID) (int64, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	d, err := f.lookup(id, "read read-ahead")
	return d.kib, err
}

// SetReadAhead stores what the kernel would keep of kib.
func (f *FakeHost) SetReadAhead(id readahead.DeviceID, kib int64) error {
	if hook := f.beforeSet(); hook != nil {
		hook(id, kib)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.sets = append(f.sets, SetCall{Device: id, KiB: kib})
	d, err := f.lookup(id, "set read-ahead")
	if err != nil {
		return err
	}
	if err := f.failures[id.Name]; err != nil {
		return &readahead.DeviceError{Op: "set read-ahead", Device: id, Path: fakePath(id), Err: err}
	}
	d.kib = readahead.KernelKiB(kib)
	f.devices[id.Name] = d
	return nil
}

func (f *FakeHost) beforeSet() func(readahead.DeviceID, int64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.BeforeSet
}

func (f *FakeHost) lookup(id readahead.DeviceID, op string) (fakeDevice, error) {
	d, ok := f.devices[id.Name]
	if !ok {
		return fakeDevice{}, &readahead.DeviceError{Op: op, Device: id, Path: fakePath(id), Err: syscall.ENOENT}
	}
	if d.dev != id.Dev {
		err := fmt.Errorf("%s is now %s: %w", id.Name, d.dev, readahead.ErrDeviceChanged)
		return fakeDevice{}, &readahead.DeviceError{Op: op, Device: id, Path: fakePath(id), Err: err}
	}
	return d, nil
}

func fakePath(id readahead.DeviceID) string { return "/dev/" + id.Name + " (fake)" }
