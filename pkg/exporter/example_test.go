package exporter_test

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/ibfabric/ibdiag/pkg/discover"
	"github.com/ibfabric/ibdiag/pkg/exporter"
	"github.com/ibfabric/ibdiag/pkg/fabric"
	"github.com/ibfabric/ibdiag/pkg/health"
)

// Example sweeps the embedded simulator's fabric once (discovery, the
// counters, two health checks) and prints some of the metrics a scrape
// would get.
func Example() {
	ctx := context.Background()
	c, err := fabric.Open(ctx, fabric.Options{Sim: "../fabric/testdata/loop.net", SimSM: true})
	if err != nil {
		fmt.Println(err)
		return
	}
	col, err := exporter.Collect(ctx, exporter.Config{
		Transport: c.Transport,
		Discover:  discover.Config{Timeout: time.Second},
		Checks:    []string{health.CheckLinks, health.CheckRoutes},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	e := exporter.New()
	if err := e.Set(col); err != nil {
		fmt.Println(err)
		return
	}
	var b bytes.Buffer
	if err := exporter.WriteText(&b, e); err != nil {
		fmt.Println(err)
		return
	}
	sc := bufio.NewScanner(&b)
	for sc.Scan() {
		l := sc.Text()
		for _, name := range []string{"infiniband_exporter_up", "infiniband_exporter_nodes", "infiniband_hca_uplink_info", "infiniband_health_"} {
			if strings.HasPrefix(l, name) {
				fmt.Println(l)
			}
		}
	}
	// Output:
	// infiniband_exporter_up 1
	// infiniband_exporter_nodes{type="hca"} 3
	// infiniband_exporter_nodes{type="router"} 0
	// infiniband_exporter_nodes{type="switch"} 3
	// infiniband_hca_uplink_info{guid="0x0000000000100000",hca="h1",port="1",uplink="sw1",uplink_guid="0x0000000000200000",uplink_lid="1",uplink_port="1",uplink_type="SW"} 1
	// infiniband_hca_uplink_info{guid="0x0000000000100002",hca="h2",port="1",uplink="sw2",uplink_guid="0x0000000000200001",uplink_lid="2",uplink_port="1",uplink_type="SW"} 1
	// infiniband_hca_uplink_info{guid="0x0000000000100004",hca="h3",port="1",uplink="sw3",uplink_guid="0x0000000000200002",uplink_lid="3",uplink_port="1",uplink_type="SW"} 1
	// infiniband_health_check_status{check="links",status="passed"} 1
	// infiniband_health_check_status{check="routes",status="passed"} 1
	// infiniband_health_problems 0
}
