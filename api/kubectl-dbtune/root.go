package main

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/dbtune/scratch-operator/api/buildinfo"
	"github.com/dbtune/scratch-operator/api/v1alpha1"
)

// fieldManager names the plugin's writes (an approval) in managedFields.
const fieldManager = "kubectl-dbtune"

// requestTimeout bounds a command that the user did not give --request-timeout.
const requestTimeout = 30 * time.Second

// app is what every command shares: the kubeconfig flags kubectl itself takes, the streams, and the
// clients built from them on first use.
type app struct {
	flags   *genericclioptions.ConfigFlags
	streams genericiooptions.IOStreams
	// now is the clock that ages are written against.
	now func() time.Time

	c client.Client
}

func build() buildinfo.Info {
	return buildinfo.Info{Component: "kubectl plugin", Version: version, Revision: revision}
}

func newRoot(streams genericiooptions.IOStreams) *cobra.Command {
	a := &app{flags: genericclioptions.NewConfigFlags(true), streams: streams, now: time.Now}
	root := &cobra.Command{
		Use:   "kubectl-dbtune",
		Short: "The dbtune scratch-operator's everyday tasks: status, approve, explain, nodes",
		Long: `kubectl dbtune shows what the dbtune scratch-operator did and lets its pending changes through.

It uses your kubeconfig and your permissions, nothing more: status, explain and nodes need only
read access (the view role, which the operator's dbtune-viewer role extends); approve needs patch
on scratchvolumes (the edit role, or dbtune-scratchvolume-editor).`,
		SilenceUsage:  true,
		SilenceErrors: true,
		// kubectl runs a plugin as kubectl-dbtune; its help should read as the command users type.
		Annotations: map[string]string{cobra.CommandDisplayNameAnnotation: "kubectl dbtune"},
	}
	a.flags.AddFlags(root.PersistentFlags())
	_ = root.RegisterFlagCompletionFunc("namespace", a.completeNamespaces)
	root.SetOut(streams.Out)
	root.SetErr(streams.ErrOut)
	root.AddCommand(a.statusCommand(), a.approveCommand(), a.explainCommand(), a.nodesCommand(), a.versionCommand())
	return root
}

// scheme knows the kinds the plugin reads: Kubernetes' own and dbtune.io's.
func scheme() *runtime.Scheme {
	s := runtime.NewScheme()
	_ = clientgoscheme.AddToScheme(s)
	_ = v1alpha1.AddToScheme(s)
	return s
}

// client is the user's client, built on first use.
func (a *app) client() (client.Client, error) {
	if a.c != nil {
		return a.c, nil
	}
	cfg, err := a.flags.ToRESTConfig()
	if err != nil {
		return nil, fmt.Errorf("cannot read the kubeconfig: %w", err)
	}
	cfg.UserAgent = "kubectl-dbtune/" + version
	a.c, err = client.New(cfg, client.Options{Scheme: scheme()})
	if err != nil {
		return nil, fmt.Errorf("cannot connect to the API server: %w", err)
	}
	return a.c, nil
}

// namespace is -n, or the kubeconfig context's namespace, or default.
func (a *app) namespace() (string, error) {
	ns, _, err := a.flags.ToRawKubeConfigLoader().Namespace()
	if err != nil {
		return "", fmt.Errorf("cannot read the kubeconfig: %w", err)
	}
	return ns, nil
}

// clientIn is the client and the namespace the command works in (-n, or the kubeconfig's).
func (a *app) clientIn() (client.Client, string, error) {
	c, err := a.client()
	if err != nil {
		return nil, "", err
	}
	ns, err := a.namespace()
	if err != nil {
		return nil, "", err
	}
	return c, ns, nil
}

// context bounds a command by --request-timeout, or requestTimeout.
func (a *app) context(cmd *cobra.Command) (context.Context, context.CancelFunc) {
	timeout := requestTimeout
	if t := a.flags.Timeout; t != nil && *t != "" && *t != "0" {
		if d, err := time.ParseDuration(*t); err == nil && d > 0 {
			timeout = d
		}
	}
	return context.WithTimeout(cmd.Context(), timeout)
}

// access says what a read or write needs, for the message a refusal gets.
type access struct {
	// verb and resource are what was asked ("list", "scratchvolumes"); namespace is empty for a
	// cluster-scoped resource or a read of all namespaces.
	verb, resource, namespace string
	// grant says which role lets one do it.
	grant string
}

var (
	readScratchVolumes = access{verb: "list", resource: "scratchvolumes", grant: "the view role (or dbtune-viewer) bound in the namespace; with --all-namespaces, a ClusterRoleBinding"}
	readStatefulSets   = access{verb: "get", resource: "statefulsets", grant: "the view role bound in the namespace"}
	readNodeProfiles   = access{verb: "list", resource: "nodeioprofiles", grant: "a ClusterRoleBinding to view or dbtune-viewer: NodeIOProfiles belong to no namespace, so a RoleBinding does not reach them"}
	approveChanges     = access{verb: "patch", resource: "scratchvolumes", grant: "the edit role or dbtune-scratchvolume-editor bound in the namespace"}
)

// userError turns an API error into what the user should read: what was refused and what to ask
// for, what is not installed, what does not exist. Other errors pass as they are.
func userError(err error, what access) error {
	switch {
	case err == nil:
		return nil
	case apierrors.IsForbidden(err):
		where := "at the cluster scope"
		if what.namespace != "" {
			where = "in namespace " + what.namespace
		}
		return fmt.Errorf("you may not %s %s %s.\n  It needs %s.\n  The API server said: %w", what.verb, what.resource, where, what.grant, err)
	case apierrors.IsUnauthorized(err):
		return fmt.Errorf("the API server did not accept your credentials (%w): log in again, or pick another context with --context", err)
	case meta.IsNoMatchError(err) || apierrors.IsNotFound(err) && strings.Contains(err.Error(), "the server could not find the requested resource"):
		return notInstalled(what.resource)
	}
	return err
}

// notInstalled is the error of a cluster that serves no dbtune.io kind of that name.
func notInstalled(resource string) error {
	return fmt.Errorf("this cluster serves no dbtune.io/v1alpha1 %s: the dbtune scratch-operator is not installed here (docs/install.md), or your context points at another cluster (kubectl config current-context)", resource)
}
