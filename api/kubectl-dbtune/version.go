package main

import (
	"context"
	"fmt"
	"sort"

	"github.com/spf13/cobra"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/dbtune/scratch-operator/api/v1alpha1"
)

// versionReport is what `version -o json|yaml` prints.
type versionReport struct {
	Plugin pluginVersion  `json:"plugin"`
	Server *serverVersion `json:"server,omitempty"`
}

type pluginVersion struct {
	Version  string `json:"version"`
	Revision string `json:"revision,omitempty"`
}

type serverVersion struct {
	Kubernetes string `json:"kubernetes,omitempty"`
	// Kinds are the dbtune.io/v1alpha1 kinds the cluster serves: empty when the operator is not
	// installed.
	Kinds []string `json:"dbtuneKinds"`
	// Managers are the versions of the manager that wrote the configurations the readable
	// ScratchVolumes report (status.targets[].applied.version), newest write's first.
	Managers []string `json:"managerVersions,omitempty"`
	// Error says what could not be read.
	Error string `json:"error,omitempty"`
}

func (a *app) versionCommand() *cobra.Command {
	var clientOnly bool
	var out outputFlag
	cmd := &cobra.Command{
		Use:   "version",
		Short: "The plugin's version, and the cluster's: Kubernetes, the dbtune kinds it serves, the manager versions its ScratchVolumes report",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			r := versionReport{Plugin: pluginVersion{Version: version, Revision: revision}}
			if !clientOnly {
				ctx, cancel := a.context(cmd)
				defer cancel()
				r.Server = a.serverVersion(ctx)
			}
			if out.structured() {
				return out.print(a.streams.Out, r)
			}
			fmt.Fprintln(a.streams.Out, build().String())
			if s := r.Server; s != nil {
				switch {
				case s.Error != "":
					fmt.Fprintf(a.streams.Out, "server: %s\n", s.Error)
				case len(s.Kinds) == 0:
					fmt.Fprintf(a.streams.Out, "server: Kubernetes %s, no dbtune.io/v1alpha1 kinds: the operator is not installed (docs/install.md)\n", s.Kubernetes)
				default:
					fmt.Fprintf(a.streams.Out, "server: Kubernetes %s, dbtune.io/v1alpha1 %v\n", s.Kubernetes, s.Kinds)
					managers := "none reported by the ScratchVolumes you can read"
					if len(s.Managers) > 0 {
						managers = fmt.Sprint(s.Managers)
					}
					fmt.Fprintf(a.streams.Out, "manager: %s\n", managers)
				}
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&clientOnly, "client", false, "print the plugin's version only, without reaching the cluster")
	out.add(cmd)
	return cmd
}

func (a *app) serverVersion(ctx context.Context) *serverVersion {
	s := &serverVersion{Kinds: []string{}}
	disco, err := a.flags.ToDiscoveryClient()
	if err != nil {
		s.Error = err.Error()
		return s
	}
	v, err := disco.ServerVersion()
	if err != nil {
		s.Error = "cannot reach the API server: " + err.Error()
		return s
	}
	s.Kubernetes = v.GitVersion
	if res, err := disco.ServerResourcesForGroupVersion(v1alpha1.GroupVersion.String()); err == nil {
		for _, r := range res.APIResources {
			if r.Kind != "" && !containsSlash(r.Name) {
				s.Kinds = append(s.Kinds, r.Kind)
			}
		}
		sort.Strings(s.Kinds)
	}
	if len(s.Kinds) == 0 {
		return s
	}
	s.Managers = a.managerVersions(ctx)
	return s
}

func containsSlash(s string) bool {
	for _, r := range s {
		if r == '/' {
			return true
		}
	}
	return false
}

// managerVersions reads the versions the manager recorded in the ScratchVolumes the user can read:
// of every namespace if allowed, else of the current one.
func (a *app) managerVersions(ctx context.Context) []string {
	c, err := a.client()
	if err != nil {
		return nil
	}
	list := &v1alpha1.ScratchVolumeList{}
	if err := c.List(ctx, list); err != nil {
		ns, nsErr := a.namespace()
		if nsErr != nil || c.List(ctx, list, client.InNamespace(ns)) != nil {
			return nil
		}
	}
	newest := map[string]int64{}
	for _, sv := range list.Items {
		for _, t := range sv.Status.Targets {
			if t.Applied != nil && t.Applied.Version != "" {
				newest[t.Applied.Version] = max(newest[t.Applied.Version], t.Applied.Generation)
			}
		}
	}
	var out []string
	for v := range newest {
		out = append(out, v)
	}
	sort.Strings(out)
	return out
}
