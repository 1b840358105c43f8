package inject

import (
	"math"

	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/dbtune/scratch-operator/api/paths"
	"github.com/dbtune/scratch-operator/api/v1alpha1"
)

// checkSpec refuses what the API refuses today but may hold in an object stored before its
// rules existed: the volume must be a whole number of bytes within the API's bounds, and the
// headroom too, so that nothing odd ever reaches a pod template or a message.
func checkSpec(sv *v1alpha1.ScratchVolume) error {
	minSize, maxSize := resource.MustParse(v1alpha1.MinScratchVolumeSize), resource.MustParse(v1alpha1.MaxScratchVolumeSize)
	if !wholeBytes(sv.Spec.Size) || sv.Spec.Size.Cmp(minSize) < 0 || sv.Spec.Size.Cmp(maxSize) > 0 {
		return problemf(v1alpha1.ReasonInvalidSpec,
			"spec.size %s is not a whole number of bytes from %s to %s; write it as 512Mi or 4Gi (512m means 0.512 bytes)",
			sv.Spec.Size.String(), v1alpha1.MinScratchVolumeSize, v1alpha1.MaxScratchVolumeSize)
	}
	if m := sv.Spec.MySQL; m != nil {
		mount := sv.EffectiveMountPath()
		for _, d := range []struct{ field, dir string }{{"spec.mysql.dataDir", string(m.DataDir)}, {"spec.mysql.configDir", string(m.ConfigDir)}} {
			if d.dir != "" && (paths.Within(mount, d.dir) || paths.Within(d.dir, mount)) {
				return problemf(v1alpha1.ReasonInvalidSpec,
					"the scratch volume's mount path %s overlaps %s %s: the volume would hide it; choose another spec.mountPath",
					mount, d.field, d.dir)
			}
		}
	}
	if h := sv.Spec.Memory.Headroom; h != nil {
		maxHeadroom := resource.MustParse(v1alpha1.MaxMemoryHeadroom)
		if !wholeBytes(*h) || h.Sign() < 0 || h.Cmp(maxHeadroom) > 0 {
			return problemf(v1alpha1.ReasonInvalidSpec,
				"spec.memory.headroom %s is not a whole number of bytes from 0 to %s; write it as 256Mi or 1Gi",
				h.String(), v1alpha1.MaxMemoryHeadroom)
		}
	}
	return nil
}

// wholeBytes reports whether q is an integer number of bytes that fits in an int64, however it
// is spelled (0.5Gi is whole, 512m is not).
func wholeBytes(q resource.Quantity) bool {
	return q.CmpInt64(math.MaxInt64) <= 0 && q.CmpInt64(q.Value()) == 0
}
