// Package cli holds what the node agent's commands (probe, run, readahead) share: flags for byte
// sizes written as Kubernetes quantities, small-file and temporary-file workloads and [name=]value
// pairs, the --target and --device flags with the one rule that gives each device to its target,
// and the exit codes.
package cli

import (
	"flag"
	"fmt"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/dbtune/scratch-operator/node-agent/probe"
)

// Named is a flag value of the form [name=]value.
type Named struct{ Name, Value string }

// SplitNamed splits "name=value"; a part before "=" that contains a slash is a path, not a name, so
// `--target /a=b` is the path "/a=b".
func SplitNamed(s string) Named {
	if name, value, ok := strings.Cut(s, "="); ok && name != "" && !strings.Contains(name, "/") {
		return Named{Name: name, Value: value}
	}
	return Named{Value: s}
}

// Bytes registers a byte-size flag that accepts Kubernetes quantities (128Mi, 5M, 5000), the unit
// notation users of this project already write in manifests.
func Bytes(fs *flag.FlagSet, p *int64, name, help string) {
	fs.Var(&bytesValue{p: p}, name, help+" (bytes, or a quantity such as 128Mi)")
}

type bytesValue struct{ p *int64 }

func (b *bytesValue) String() string {
	if b.p == nil {
		return ""
	}
	return strconv.FormatInt(*b.p, 10)
}

func (b *bytesValue) Set(s string) error {
	n, err := ParseBytes(s)
	if err != nil {
		return err
	}
	*b.p = n
	return nil
}

// ParseBytes reads a positive whole number of bytes, written plainly or as a quantity.
func ParseBytes(s string) (int64, error) {
	q, err := resource.ParseQuantity(s)
	if err != nil {
		return 0, fmt.Errorf("%q is not a size: use bytes or a quantity such as 128Mi or 5M", s)
	}
	n, ok := q.AsInt64()
	if !ok || n <= 0 {
		return 0, fmt.Errorf("%q is not a positive whole number of bytes", s)
	}
	return n, nil
}

// Churn registers --churn size:files, repeatable; the first value replaces the default workloads.
func Churn(fs *flag.FlagSet, o *probe.Options, help string) {
	fs.Var(&sizeFilesValue[probe.ChurnSize]{list: &o.Churn, make: func(n int64, files int) probe.ChurnSize {
		return probe.ChurnSize{FileBytes: n, Files: files}
	}, show: func(c probe.ChurnSize) (int64, int) { return c.FileBytes, c.Files }}, "churn", help)
}

// TempFiles registers --temp-files size:files, repeatable; the first value replaces the default
// workloads.
func TempFiles(fs *flag.FlagSet, o *probe.Options, help string) {
	fs.Var(&sizeFilesValue[probe.TempFileSize]{list: &o.TempFiles, make: func(n int64, files int) probe.TempFileSize {
		return probe.TempFileSize{FileBytes: n, Files: files}
	}, show: func(s probe.TempFileSize) (int64, int) { return s.FileBytes, s.Files }}, "temp-files", help)
}

// sizeFilesValue is a repeatable size:files flag over a list of workloads of type T.
type sizeFilesValue[T any] struct {
	list *[]T
	make func(bytes int64, files int) T
	show func(T) (bytes int64, files int)
	set  bool
}

func (v *sizeFilesValue[T]) String() string {
	if v.list == nil {
		return ""
	}
	parts := make([]string, 0, len(*v.list))
	for _, w := range *v.list {
		n, files := v.show(w)
		parts = append(parts, fmt.Sprintf("%d:%d", n, files))
	}
	return strings.Join(parts, ",")
}

func (v *sizeFilesValue[T]) Set(s string) error {
	size, files, ok := strings.Cut(s, ":")
	if !ok {
		return fmt.Errorf("%q is not size:files", s)
	}
	n, err := ParseBytes(size)
	if err != nil {
		return err
	}
	count, err := strconv.Atoi(files)
	if err != nil || count <= 0 {
		return fmt.Errorf("%q: the file count must be a positive integer", s)
	}
	if !v.set {
		*v.list, v.set = nil, true
	}
	*v.list = append(*v.list, v.make(n, count))
	return nil
}
