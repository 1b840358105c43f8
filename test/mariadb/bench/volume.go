package main

import (
	"fmt"
	"os"
	"sort"
	"strings"

	"github.com/dbtune/scratch-operator/test/cloudvolume"
	"github.com/dbtune/scratch-operator/test/mariadb"
)

// dataClaim is the volumeClaimTemplate holding the data directory.
const dataClaim = "data"

// volumeProfiles are the -volume choices besides "none".
var volumeProfiles = map[string]cloudvolume.Profile{
	cloudvolume.GP3.Name:        cloudvolume.GP3,
	cloudvolume.PDBalanced.Name: cloudvolume.PDBalanced,
	cloudvolume.LocalNVMe.Name:  cloudvolume.LocalNVMe,
}

// volumeChoices lists the -volume values, for the flag's help and its error.
func volumeChoices() string {
	names := make([]string, 0, len(volumeProfiles))
	for name := range volumeProfiles {
		names = append(names, name)
	}
	sort.Strings(names)
	return strings.Join(append([]string{"none"}, names...), ", ")
}

// profileFor returns the profile a -volume value names; ok is false for "none".
func profileFor(name string) (p cloudvolume.Profile, ok bool, err error) {
	if name == "none" {
		return cloudvolume.Profile{}, false, nil
	}
	p, ok = volumeProfiles[name]
	if !ok {
		return p, false, fmt.Errorf("-volume %q is not one of %s", name, volumeChoices())
	}
	return p, true, nil
}

// attachDataVolume mounts a cloud volume where the pod's data claim lives, before the pod starts,
// so that the data directory (and whatever else the pod keeps on its claim) is on it.
func attachDataVolume(pod *mariadb.Pod, p cloudvolume.Profile, size int64) (*cloudvolume.Volume, error) {
	dir := pod.ClaimDir(dataClaim)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	v, err := cloudvolume.Open(cloudvolume.Options{Profile: p, SizeBytes: size, MountPoint: dir, Logf: logf})
	if err != nil {
		return nil, fmt.Errorf("failed to put pod %s's data volume on a %s cloud volume: %w", pod.Name, p.Name, err)
	}
	return v, nil
}

func logf(format string, args ...any) { fmt.Fprintf(os.Stderr, "bench: "+format+"\n", args...) }
