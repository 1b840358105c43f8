package probe

import (
	"crypto/rand"
	"fmt"
	mrand "math/rand/v2"

	"golang.org/x/sys/unix"
)

// buffers are the run's two I/O buffers. They are anonymous mappings rather than Go slices for two
// reasons: a mapping is page-aligned, which O_DIRECT needs, and unmapping it hands the memory back
// to the kernel at once instead of leaving a long-running agent with a large idle heap.
type buffers struct {
	// write holds incompressible data and is never written into after filling, so every target
	// writes the same bytes.
	write []byte
	// read receives data read back; it is separate so that reads never replace the random data.
	read []byte
}

func newBuffers(o *Options) (*buffers, error) {
	w, err := mapAnonymous(o.writeBufferBytes())
	if err != nil {
		return nil, err
	}
	r, err := mapAnonymous(o.readBufferBytes())
	if err != nil {
		_ = unix.Munmap(w)
		return nil, err
	}
	fillRandom(w)
	return &buffers{write: w, read: r}, nil
}

func mapAnonymous(size int64) ([]byte, error) {
	b, err := unix.Mmap(-1, 0, int(size), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	if err != nil {
		return nil, fmt.Errorf("failed to map a %d-byte I/O buffer: %w", size, err)
	}
	return b, nil
}

// fillRandom fills b from ChaCha8 seeded from the system's random source: data that compressing or
// deduplicating storage cannot shrink, generated far faster than reading /dev/urandom.
func fillRandom(b []byte) {
	var seed [32]byte
	_, _ = rand.Read(seed[:])
	_, _ = mrand.NewChaCha8(seed).Read(b)
}

func (b *buffers) release() {
	_ = unix.Munmap(b.write)
	_ = unix.Munmap(b.read)
}
