package main

import (
	"context"
	"math"
	"runtime"
	"time"

	"golang.org/x/sys/unix"
)

// Cost is what one round of a workload cost, averaged over the rounds of one measurement.
type Cost struct {
	Rounds int `json:"rounds"`
	// CPUSeconds is the process's user + system time per round (getrusage), which includes the
	// garbage collector's work on other threads.
	CPUSeconds  float64 `json:"cpuSecondsPerRound"`
	WallSeconds float64 `json:"wallSecondsPerRound"`
	Allocs      float64 `json:"allocsPerRound"`
	AllocBytes  float64 `json:"allocBytesPerRound"`
}

// maxRounds bounds a measurement whose rounds are too quick for the clock to see.
const maxRounds = 10_000_000

// measure runs round for about minTime and returns its cost per round. The number of rounds is
// fixed beforehand, as testing.B does, so that the timed loop reads no clock: at one volume a
// round lasts a few microseconds, and a clock read per round would be part of it.
func measure(ctx context.Context, minTime time.Duration, round func() error) (Cost, error) {
	n, err := calibrate(ctx, minTime, round)
	if err != nil {
		return Cost{}, err
	}
	// Collect the garbage earlier work left, so that only this workload's is billed to it.
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	cpu0, wall0 := cpuTime(), time.Now()
	for range n {
		if err := round(); err != nil {
			return Cost{}, err
		}
	}
	wall, cpu := time.Since(wall0), cpuTime()-cpu0
	runtime.ReadMemStats(&after)
	per := func(v float64) float64 { return v / float64(n) }
	return Cost{
		Rounds: n, CPUSeconds: per(cpu.Seconds()), WallSeconds: per(wall.Seconds()),
		Allocs: per(float64(after.Mallocs - before.Mallocs)), AllocBytes: per(float64(after.TotalAlloc - before.TotalAlloc)),
	}, nil
}

// calibrate doubles the rounds until they last a tenth of minTime, and returns how many would
// last minTime. It is also the workload's warm-up.
func calibrate(ctx context.Context, minTime time.Duration, round func() error) (int, error) {
	for n := 1; ; n *= 2 {
		if err := ctx.Err(); err != nil {
			return 0, err
		}
		start := time.Now()
		for range n {
			if err := round(); err != nil {
				return 0, err
			}
		}
		elapsed := time.Since(start)
		if elapsed >= minTime/10 || n >= maxRounds {
			want := math.Ceil(float64(n) * float64(minTime) / float64(max(elapsed, time.Nanosecond)))
			return int(min(want, maxRounds)), nil
		}
	}
}

// cpuTime is the user and system time of the whole process so far.
func cpuTime() time.Duration {
	var ru unix.Rusage
	if err := unix.Getrusage(unix.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// liveHeap is the heap in use once the garbage is collected: what the objects still reachable
// hold. It collects twice because what a sync.Pool holds (encoding/json keeps the buffer of its
// last encoding there) survives one collection.
func liveHeap() int64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return int64(m.HeapAlloc)
}
