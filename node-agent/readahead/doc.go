// Package readahead reads and sets the read-ahead of a node's block devices for ReadAheadPolicy.
//
// The work splits the way the rest of the agent does: gather, decide, act.
//
//   - Gather: ReadInventory reads the host's block devices from sysfs and its mounts from
//     mountinfo, under a root directory that is "/" on the host and a hostPath mount in a pod
//     (and a fixture tree in tests).
//   - Decide: Inventory.Select turns a v1alpha1.DeviceSelector into the devices to tune and the
//     reasons anything asked for was not selected; Decide combines a policy's value with the
//     current one; Arbitrate picks the policy that owns a device several policies select.
//   - Act: a Host reads and writes read-ahead (BLKRAGET/BLKRASET on the device node, or
//     queue/read_ahead_kb in sysfs); Apply and Restore do so through a Store that keeps each
//     device's original value in a file on the host, written before the first change.
//
// # Which devices are eligible
//
// Read-ahead is a property of a whole disk's request queue: a partition has none of its own (its
// queue/read_ahead_kb does not exist, and BLKRASET on a partition changes the disk), so a
// partition always stands for its disk. A device-mapper device (LVM, dm-crypt, multipath) has its
// own read-ahead, which is the one a filesystem on it uses; DeviceMapperResolution decides
// whether the dm device, the disks under it (through every dm level), or both are tuned. Devices
// between the top dm device and the disks (the LUKS layer under LVM) are never tuned: nothing
// reads through their page cache.
//
// Every selected device is then checked, and these are never tuned:
//
//   - removable media (USB sticks, card readers, optical drives): they come and go, and a value
//     left on one would follow whatever is plugged in next;
//   - zram and ram disks, even when named: they are memory, read-ahead hides no seek there and
//     only fills the page cache with pages nobody asked for;
//   - hidden devices (the per-controller paths of NVMe native multipath): the kernel gives them
//     no device node, the multipath head (nvme1n1) is the one to tune;
//   - empty devices (size 0: a loop device with no file, a drive with no medium);
//   - loop devices, unless a name pattern that starts with "loop" picked them: a loop device is
//     somebody's file (a snap, a container image), never a database disk by accident, so only a
//     pattern that asks for loop devices by name gets them.
//
// A name pattern that ends up with no eligible device, and a mount path that cannot be resolved
// to one, is a problem the Selection reports with the reason; a wildcard pattern that also
// matches ineligible devices is not, as long as it selects something.
package readahead
