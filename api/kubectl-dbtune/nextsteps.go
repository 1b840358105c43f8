package main

import (
	"strings"

	"github.com/dbtune/scratch-operator/api/v1alpha1"
)

// nextSteps is, for each reason a ScratchVolume's Ready condition can give, what to do about it.
// {sv} and {ns} stand for the ScratchVolume and its namespace. docs/troubleshooting.md says more; a test
// holds this table to the reasons listed there.
var nextSteps = map[string]string{
	"NotReported": "check that the manager runs and can reach this namespace: kubectl get pods -n dbtune-system; its --namespaces flag may leave {ns} out",

	v1alpha1.ReasonTargetNotFound:  "create the StatefulSet, or fix spec.target of {sv}: kubectl get statefulsets -n {ns} --show-labels lists what it could select",
	v1alpha1.ReasonInvalidSelector: "fix spec.target.selector of {sv}: the message names the key or value that is not a label",

	v1alpha1.ReasonContainerNotFound:       "set spec.container of {sv} to the database container; for a custom image also spec.mysql.flavor and spec.mysql.version",
	v1alpha1.ReasonContainerAmbiguous:      "set spec.container of {sv}: the pod has several candidate containers",
	v1alpha1.ReasonUnknownImage:            "set spec.mysql.flavor and spec.mysql.version of {sv}: the image reference does not say them",
	v1alpha1.ReasonMountPathInUse:          "choose a free spec.mountPath for {sv}, or free the path in the container",
	v1alpha1.ReasonVolumeNameInUse:         "rename the pod template's volume or init container that takes the dbtune- name, or the ScratchVolume",
	v1alpha1.ReasonConfigDirUnusable:       "set spec.mysql.configDir of {sv} to a directory your my.cnf includes, or spec.mysql.injection: Args",
	v1alpha1.ReasonEntrypointRemovesTmpdir: "set spec.mysql.injection: Args on {sv} (the start script reads tmpdir from option files only)",
	v1alpha1.ReasonExtraFlagsNotMergeable:  "set the chart's extraFlags as a literal value, or spec.mysql.injection: ConfigFile with spec.mysql.configDir",
	v1alpha1.ReasonOverriddenByArgs:        "remove the flag the message names from the container's args, or set spec.mysql.injection: Args on {sv}",
	v1alpha1.ReasonArgsIgnored:             "set spec.mysql.injection: ConfigFile on {sv}: this image's entrypoint does not pass args to the server",
	v1alpha1.ReasonInvalidLayout:           "fix spec.mysql.replicaLoadDir or spec.mysql.dataDir of {sv} so that they lie on the persistent data volume",
	v1alpha1.ReasonInvalidArgs:             "fix the innodb_buffer_pool_size in the container's args (such as --innodb-buffer-pool-size=4G)",
	v1alpha1.ReasonInvalidSpec:             "rewrite the field of {sv} the message names as the API accepts it today (such as size: 512Mi)",
	v1alpha1.ReasonScratchVolumeConflict:   "delete one of the two ScratchVolumes, or point {sv} at another container or mount path",
	v1alpha1.ReasonControlledByOperator:    "give the database its RAM tmpdir through the operator that owns the StatefulSet (docs/tuning.md), or list its kind in spec.target.allowedControllers of {sv} if it keeps others' fields",
	v1alpha1.ReasonFightingAnotherWriter:   "make the writer named in status.targets[].writeWar keep fields it does not own (server-side apply; docs/gitops.md), then edit the spec of {sv} to try again at once",
	v1alpha1.ReasonWriteFailed:             "fix what the error names; the controller retries with a growing delay (kubectl dbtune explain statefulset/NAME -n {ns} shows the target)",
	v1alpha1.ReasonAdmissionDenied:         "make the admission policy the message names admit the change (with config/samples/policy, label the StatefulSet dbtune.io/scratch-opt-in=true)",
	v1alpha1.ReasonLimitRange:              "raise the LimitRange's maximum, lower spec.size of {sv}, or use spec.memory.accounting: Validate with a limit that holds the volume",
	v1alpha1.ReasonResourceQuota:           "raise the ResourceQuota, lower spec.size of {sv}, or use spec.memory.accounting: Validate",
	v1alpha1.ReasonPodsRefused:             "make the policy the message names admit the injected pods, then edit any field of the spec of {sv}: the controller injects again on an edit",
	v1alpha1.ReasonMemoryBudget:            "raise the memory limit the message names, lower spec.size of {sv}, or set spec.memory.accounting: Reserve",
	v1alpha1.ReasonNotInjected:             "read why each target is not injected: kubectl dbtune explain statefulset/NAME -n {ns}",

	v1alpha1.ReasonRollingOut:            "wait for the pods to be replaced: kubectl rollout status statefulset/NAME -n {ns}",
	v1alpha1.ReasonWaitingForController:  "wait; if it lasts, check that kube-controller-manager runs",
	v1alpha1.ReasonOnDelete:              "the StatefulSet uses updateStrategy OnDelete: delete its pods one at a time when it suits you",
	v1alpha1.ReasonPartitioned:           "lower the StatefulSet's spec.updateStrategy.rollingUpdate.partition to let the other pods through",
	v1alpha1.ReasonWaitingForRolloutSlot: "wait: spec.rollout.maxInFlight StatefulSets roll at once; raise it on {sv} to go faster",
	v1alpha1.ReasonRolloutStopped:        "find out why the StatefulSet the message names does not get ready (kubectl rollout status, kubectl describe pod); the rollout goes on once it is",
	v1alpha1.ReasonReconcileFailed:       "the controller retries; kubectl logs -n dbtune-system deployment/dbtune-scratch-operator says more",
}

// nextStep is what to do about a ScratchVolume whose Ready condition gives reason.
func nextStep(reason string, sv *v1alpha1.ScratchVolume) string {
	step, ok := nextSteps[reason]
	if !ok {
		step = "read the message above; docs/troubleshooting.md lists every reason and what to do"
	}
	return strings.NewReplacer("{sv}", sv.Name, "{ns}", sv.Namespace).Replace(step)
}
