package main

import (
	"archive/tar"
	"bytes"
	"fmt"
	"io"
	"os"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// The user the images run as: distroless's nonroot, so that a pod's runAsUser, a volume's
// fsGroup and a PodSecurity "restricted" namespace see the same numbers as with a distroless base.
const (
	nonrootUID  = 65532
	nonrootName = "nonroot"
)

// The user and group databases name the nonroot user for tools that look it up (ps, kubectl
// debug, Go's os/user). There is no shell: the login shell is a path that does not exist.
var (
	passwd = fmt.Sprintf("root:x:0:0:root:/root:/sbin/nologin\n%s:x:%d:%d:%s:/home/%s:/sbin/nologin\n",
		nonrootName, nonrootUID, nonrootUID, nonrootName, nonrootName)
	group = fmt.Sprintf("root:x:0:\n%s:x:%d:\n", nonrootName, nonrootUID)
)

// entry is one file or directory of a layer.
type entry struct {
	path     string
	mode     int64
	uid      int
	dir      bool
	contents []byte
	// link, when set, makes the entry a symbolic link to this target.
	link string
}

// baseEntries are what every image shares: the same bytes give the same layer digest, so a node
// stores the base once for both images. /tmp exists for programs that want a temporary
// directory; with a read-only root filesystem a pod mounts an emptyDir there.
func baseEntries() []entry {
	return []entry{
		{path: "etc/", mode: 0o755, dir: true},
		{path: "etc/passwd", mode: 0o644, contents: []byte(passwd)},
		{path: "etc/group", mode: 0o644, contents: []byte(group)},
		{path: "home/", mode: 0o755, dir: true},
		{path: "home/" + nonrootName + "/", mode: 0o700, uid: nonrootUID, dir: true},
		{path: "tmp/", mode: 0o1777, dir: true},
	}
}

// binaryEntries is the layer holding the program, owned by root and not writable by the user it
// runs as.
func binaryEntries(name, file string) ([]entry, error) {
	contents, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	return []entry{{path: name, mode: 0o755, contents: contents}}, nil
}

// newLayer packs entries into a gzip-compressed OCI layer with every timestamp at created.
func newLayer(entries []entry, created time.Time) (v1.Layer, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, e := range entries {
		if err := tw.WriteHeader(header(e, created)); err != nil {
			return nil, err
		}
		if _, err := tw.Write(e.contents); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	raw := buf.Bytes()
	return tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(raw)), nil
	}, tarball.WithMediaType(types.OCILayer))
}

func header(e entry, created time.Time) *tar.Header {
	h := &tar.Header{
		Name: e.path, Mode: e.mode, Uid: e.uid, Gid: e.uid, ModTime: created,
		Uname: userName(e.uid), Gname: userName(e.uid),
	}
	switch {
	case e.dir:
		h.Typeflag = tar.TypeDir
	case e.link != "":
		h.Typeflag, h.Linkname = tar.TypeSymlink, e.link
	default:
		h.Typeflag, h.Size = tar.TypeReg, int64(len(e.contents))
	}
	return h
}

func userName(uid int) string {
	if uid == nonrootUID {
		return nonrootName
	}
	return "root"
}
