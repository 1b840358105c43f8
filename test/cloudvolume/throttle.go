package cloudvolume

import (
	"context"
	"sync/atomic"
	"time"

	"golang.org/x/time/rate"
)

// Bucket depths. A token bucket lets through up to its depth at once after an idle spell; the depths
// here are kept to about 10 ms of the rate, so that no measurement longer than a fraction of a
// second can see more than the configured rate, while a waiter that wakes late can still catch up
// on the tokens that accumulated meanwhile.
const (
	burstWindow = 10 * time.Millisecond
	// minByteBurst is the largest request the kernel sends (maxRequestBytes): a smaller bucket would
	// have to split every large request.
	minByteBurst = maxRequestBytes
)

// throttle delays each request to the volume's file as the profile says and counts what went
// through. Before it is enabled (while the file system is made) it lets everything pass at once.
type throttle struct {
	bytes   *rate.Limiter // nil: unlimited
	ops     *rate.Limiter // nil: unlimited
	latency time.Duration
	enabled atomic.Bool

	readBytes, writeBytes atomic.Int64
	reads, writes         atomic.Int64
}

func newThrottle(p Profile) *throttle {
	t := &throttle{latency: p.Latency}
	if p.BytesPerSecond > 0 {
		t.bytes = rate.NewLimiter(rate.Limit(p.BytesPerSecond), burst(p.BytesPerSecond, minByteBurst))
	}
	if p.IOPS > 0 {
		t.ops = rate.NewLimiter(rate.Limit(p.IOPS), burst(p.IOPS, 1))
	}
	return t
}

// burst is burstWindow's worth of perSecond, and at least floor.
func burst(perSecond, floor int64) int {
	return int(max(perSecond*int64(burstWindow)/int64(time.Second), floor))
}

// enable starts limiting. The buckets start empty, so that what the file system's creation left
// in them does not let a first burst through.
func (t *throttle) enable() {
	now := time.Now()
	for _, l := range []*rate.Limiter{t.bytes, t.ops} {
		if l != nil {
			_ = l.ReserveN(now, l.Burst())
		}
	}
	t.enabled.Store(true)
}

// admit returns when a request of n bytes may go ahead: after an IOPS token, n bytes of bandwidth
// tokens and the fixed latency. Waiting for tokens is queueing; the latency comes on top, as the
// round trip every request of a network volume pays however idle the volume is.
func (t *throttle) admit(ctx context.Context, n int) error {
	if !t.enabled.Load() {
		return nil
	}
	if t.ops != nil {
		if err := t.ops.Wait(ctx); err != nil {
			return err
		}
	}
	if err := t.waitBytes(ctx, n); err != nil {
		return err
	}
	return t.roundTrip(ctx)
}

func (t *throttle) roundTrip(ctx context.Context) error {
	if t.latency <= 0 {
		return nil
	}
	timer := time.NewTimer(t.latency)
	defer timer.Stop()
	select {
	case <-timer.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// waitBytes takes n bandwidth tokens, in pieces no larger than the bucket.
func (t *throttle) waitBytes(ctx context.Context, n int) error {
	if t.bytes == nil {
		return nil
	}
	for n > 0 {
		step := min(n, t.bytes.Burst())
		if err := t.bytes.WaitN(ctx, step); err != nil {
			return err
		}
		n -= step
	}
	return nil
}

// Stats counts what reached the volume's device since it was opened, the file system's creation
// excluded.
type Stats struct {
	// ReadBytes and WriteBytes are the bytes read from and written to the device.
	ReadBytes, WriteBytes int64
	// Reads and Writes count the requests.
	Reads, Writes int64
}

func (t *throttle) countRead(n int) {
	if t.enabled.Load() {
		t.reads.Add(1)
		t.readBytes.Add(int64(n))
	}
}

func (t *throttle) countWrite(n int) {
	if t.enabled.Load() {
		t.writes.Add(1)
		t.writeBytes.Add(int64(n))
	}
}

func (t *throttle) stats() Stats {
	return Stats{
		ReadBytes: t.readBytes.Load(), WriteBytes: t.writeBytes.Load(),
		Reads: t.reads.Load(), Writes: t.writes.Load(),
	}
}
