package realnode

import (
	"fmt"
	"net"
	"net/url"
	"os"
	"slices"
	"strconv"

	"github.com/google/nftables"
	"github.com/google/nftables/binaryutil"
	"github.com/google/nftables/expr"
	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// The node has no kube-proxy. Pods reach the API server the way client-go's in-cluster
// configuration does everywhere, through the `kubernetes` Service's cluster IP and port from the
// environment the kubelet gives them; one destination NAT rule plays the service proxy for that
// Service alone, sending what pods on the bridge send to it to the API server on loopback.
//
// Two things make that work without touching the rest of the machine: the rule lives in a table
// of its own (serviceTable, removed whole), and loopback is routable only on the node's bridge
// (route_localnet, a setting of the bridge's own that goes with it), not on the machine's other
// interfaces. The same table drops whatever pods send to be forwarded: the bridge plugin turns
// ip_forward on for its gateway, and nothing the pods send may leave the machine.
const (
	serviceTable = "dbtune-realnode"
	// kubernetesServicePort is the port of the `kubernetes` Service the API server creates.
	kubernetesServicePort = 443
)

// createBridge creates the CNI bridge before the first pod, so that route_localnet can be set on
// it; the bridge plugin takes an existing bridge of its name as it is and adds the gateway address.
func createBridge() error {
	bridge := &netlink.Bridge{LinkAttrs: netlink.LinkAttrs{Name: BridgeName}}
	if err := netlink.LinkAdd(bridge); err != nil {
		return fmt.Errorf("failed to create bridge %s: %w", BridgeName, err)
	}
	if err := netlink.LinkSetUp(bridge); err != nil {
		return fmt.Errorf("failed to bring bridge %s up: %w", BridgeName, err)
	}
	routeLocalnet := procSys + "net/ipv4/conf/" + BridgeName + "/route_localnet"
	if err := os.WriteFile(routeLocalnet, []byte("1"), 0o644); err != nil {
		return fmt.Errorf("failed to route loopback addresses on %s: %w", BridgeName, err)
	}
	return nil
}

// addServiceProxy adds the rule that sends what pods send to serviceIP:443 to the API server at
// apiServer (https://127.0.0.1:PORT).
func addServiceProxy(serviceIP, apiServer string) error {
	ip := net.ParseIP(serviceIP).To4()
	if ip == nil {
		return fmt.Errorf("the kubernetes Service IP %q is not an IPv4 address", serviceIP)
	}
	u, err := url.Parse(apiServer)
	if err != nil {
		return err
	}
	port, err := strconv.ParseUint(u.Port(), 10, 16)
	if err != nil || u.Hostname() != "127.0.0.1" {
		return fmt.Errorf("the API server %s is not on 127.0.0.1 with a port", apiServer)
	}
	conn, err := nftables.New()
	if err != nil {
		return err
	}
	table := conn.AddTable(&nftables.Table{Family: nftables.TableFamilyIPv4, Name: serviceTable})
	chain := conn.AddChain(&nftables.Chain{
		Name: "services", Table: table, Type: nftables.ChainTypeNAT,
		Hooknum: nftables.ChainHookPrerouting, Priority: nftables.ChainPriorityNATDest,
	})
	// iifname dbtune-cni0 ip daddr SERVICE tcp dport 443 dnat to 127.0.0.1:PORT
	conn.AddRule(&nftables.Rule{Table: table, Chain: chain, Exprs: []expr.Any{
		&expr.Meta{Key: expr.MetaKeyIIFNAME, Register: 1},
		&expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: interfaceName(BridgeName)},
		&expr.Payload{DestRegister: 1, Base: expr.PayloadBaseNetworkHeader, Offset: 16, Len: 4},
		&expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: ip},
		&expr.Meta{Key: expr.MetaKeyL4PROTO, Register: 1},
		&expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: []byte{unix.IPPROTO_TCP}},
		&expr.Payload{DestRegister: 1, Base: expr.PayloadBaseTransportHeader, Offset: 2, Len: 2},
		&expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: binaryutil.BigEndian.PutUint16(kubernetesServicePort)},
		&expr.Immediate{Register: 1, Data: net.IPv4(127, 0, 0, 1).To4()},
		&expr.Immediate{Register: 2, Data: binaryutil.BigEndian.PutUint16(uint16(port))},
		&expr.NAT{Type: expr.NATTypeDestNAT, Family: unix.NFPROTO_IPV4, RegAddrMin: 1, RegProtoMin: 2, Specified: true},
	}})
	forward := conn.AddChain(&nftables.Chain{
		Name: "forward", Table: table, Type: nftables.ChainTypeFilter,
		Hooknum: nftables.ChainHookForward, Priority: nftables.ChainPriorityFilter,
	})
	// iifname dbtune-cni0 drop
	conn.AddRule(&nftables.Rule{Table: table, Chain: forward, Exprs: []expr.Any{
		&expr.Meta{Key: expr.MetaKeyIIFNAME, Register: 1},
		&expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: interfaceName(BridgeName)},
		&expr.Verdict{Kind: expr.VerdictDrop},
	}})
	if err := conn.Flush(); err != nil {
		return fmt.Errorf("failed to add the service rule in nftables table %s: %w", serviceTable, err)
	}
	return nil
}

// interfaceName is name as nftables compares interface names: NUL-padded to IFNAMSIZ.
func interfaceName(name string) []byte {
	b := make([]byte, unix.IFNAMSIZ)
	copy(b, name)
	return b
}

// ServiceProxyExists reports whether the node's nftables table is there.
func ServiceProxyExists() (bool, error) {
	conn, err := nftables.New()
	if err != nil {
		return false, err
	}
	tables, err := conn.ListTablesOfFamily(nftables.TableFamilyIPv4)
	if err != nil {
		return false, fmt.Errorf("failed to list nftables tables: %w", err)
	}
	return slices.ContainsFunc(tables, func(t *nftables.Table) bool { return t.Name == serviceTable }), nil
}

// removeServiceProxy deletes the node's nftables table, if it is there.
func removeServiceProxy() error {
	exists, err := ServiceProxyExists()
	if err != nil || !exists {
		return err
	}
	conn, err := nftables.New()
	if err != nil {
		return err
	}
	conn.DelTable(&nftables.Table{Family: nftables.TableFamilyIPv4, Name: serviceTable})
	if err := conn.Flush(); err != nil {
		return fmt.Errorf("failed to delete nftables table %s: %w", serviceTable, err)
	}
	return nil
}
