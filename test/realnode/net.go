package realnode

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// BridgeExists reports whether the node's CNI bridge is there.
func BridgeExists() (bool, error) {
	_, err := netlink.LinkByName(BridgeName)
	var notFound netlink.LinkNotFoundError
	if errors.As(err, &notFound) {
		return false, nil
	}
	return err == nil, err
}

// deleteBridge deletes the node's CNI bridge. The pods' veth ends on it went with their network
// namespaces; deleting the bridge also drops its gateway address and routes.
func deleteBridge() error {
	link, err := netlink.LinkByName(BridgeName)
	var notFound netlink.LinkNotFoundError
	if errors.As(err, &notFound) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("failed to look up bridge %s: %w", BridgeName, err)
	}
	if err := netlink.LinkDel(link); err != nil {
		return fmt.Errorf("failed to delete bridge %s: %w", BridgeName, err)
	}
	return nil
}

// removeNetns removes the network namespace files under /run/netns that were not there before the
// node started (containerd keeps its own under its state directory, but a CNI plugin or an older
// setting would use /run/netns). Each is a bind mount of a namespace: unmounted, then removed.
func removeNetns(before []string) error {
	var errs []error
	for _, name := range dirEntries("/run/netns") {
		if slices.Contains(before, name) || !strings.HasPrefix(name, "cni-") {
			continue
		}
		path := "/run/netns/" + name
		_ = unix.Unmount(path, unix.MNT_DETACH)
		if err := os.Remove(path); err != nil {
			errs = append(errs, fmt.Errorf("failed to remove network namespace %s: %w", path, err))
		}
	}
	return errors.Join(errs...)
}

// removeCNICache removes what libcni caches about the node's network in /var/lib/cni when that
// directory was there before (otherwise the whole directory goes with the other absent paths):
// results/<network>-<container>-<interface> and networks/<network>.
func removeCNICache() error {
	var errs []error
	const cache = "/var/lib/cni"
	for _, name := range dirEntries(cache + "/results") {
		if strings.HasPrefix(name, cniNetwork+"-") {
			errs = append(errs, os.Remove(cache+"/results/"+name))
		}
	}
	errs = append(errs, os.RemoveAll(cache+"/networks/"+cniNetwork))
	return errors.Join(errs...)
}
