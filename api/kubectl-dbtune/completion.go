package main

import (
	"github.com/spf13/cobra"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/dbtune/scratch-operator/api/v1alpha1"
)

// The completions ask the API server with the user's kubeconfig; a failure completes nothing.

func (a *app) completeNamespaces(cmd *cobra.Command, _ []string, _ string) ([]string, cobra.ShellCompDirective) {
	return a.names(cmd, &corev1.NamespaceList{}, false, func(l client.ObjectList) []string {
		items := l.(*corev1.NamespaceList).Items
		out := make([]string, 0, len(items))
		for _, ns := range items {
			out = append(out, ns.Name)
		}
		return out
	})
}

func (a *app) completeScratchVolumes(cmd *cobra.Command, args []string, _ string) ([]string, cobra.ShellCompDirective) {
	if len(args) > 0 {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	return a.names(cmd, &v1alpha1.ScratchVolumeList{}, true, func(l client.ObjectList) []string {
		items := l.(*v1alpha1.ScratchVolumeList).Items
		out := make([]string, 0, len(items))
		for _, sv := range items {
			out = append(out, sv.Name)
		}
		return out
	})
}

// completeTargets completes --target with the targets of the ScratchVolume named first.
func (a *app) completeTargets(cmd *cobra.Command, args []string, _ string) ([]string, cobra.ShellCompDirective) {
	return a.names(cmd, &v1alpha1.ScratchVolumeList{}, true, func(l client.ObjectList) []string {
		items := l.(*v1alpha1.ScratchVolumeList).Items
		out := make([]string, 0, len(items))
		for _, sv := range items {
			if len(args) > 0 && sv.Name != args[0] {
				continue
			}
			for _, t := range sv.Status.Targets {
				out = append(out, t.Name)
			}
		}
		return out
	})
}

func (a *app) completeStatefulSets(cmd *cobra.Command, args []string, _ string) ([]string, cobra.ShellCompDirective) {
	if len(args) > 0 {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	return a.names(cmd, &appsv1.StatefulSetList{}, true, func(l client.ObjectList) []string {
		items := l.(*appsv1.StatefulSetList).Items
		out := make([]string, 0, len(items))
		for _, sts := range items {
			out = append(out, "statefulset/"+sts.Name)
		}
		return out
	})
}

func (a *app) completeNodes(cmd *cobra.Command, args []string, _ string) ([]string, cobra.ShellCompDirective) {
	if len(args) > 0 {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	return a.names(cmd, &v1alpha1.NodeIOProfileList{}, false, func(l client.ObjectList) []string {
		items := l.(*v1alpha1.NodeIOProfileList).Items
		out := make([]string, 0, len(items))
		for _, p := range items {
			out = append(out, p.Name)
		}
		return out
	})
}

func (a *app) names(cmd *cobra.Command, list client.ObjectList, namespaced bool, pick func(client.ObjectList) []string) ([]string, cobra.ShellCompDirective) {
	c, err := a.client()
	if err != nil {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	var opts []client.ListOption
	if namespaced {
		ns, err := a.namespace()
		if err != nil {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		opts = append(opts, client.InNamespace(ns))
	}
	ctx, cancel := a.context(cmd)
	defer cancel()
	if err := c.List(ctx, list, opts...); err != nil {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	return pick(list), cobra.ShellCompDirectiveNoFileComp
}
