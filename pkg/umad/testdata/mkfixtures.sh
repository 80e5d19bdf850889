#!/bin/sh
# Regenerates the sysfs fixture trees used by the tests. The values follow
# the layout of /sys/class/infiniband and /sys/class/infiniband_mad on a
# Linux 6.x host with mlx5 adapters (formats from drivers/infiniband/core/sysfs.c).
set -eu
cd "$(dirname "$0")"

ca() { # root ca node_type node_guid sys_image_guid node_desc
	d=$1/sys/class/infiniband/$2
	mkdir -p "$d/ports"
	echo "$3" >"$d/node_type"
	echo "$4" >"$d/node_guid"
	echo "$5" >"$d/sys_image_guid"
	echo "$6" >"$d/node_desc"
	echo "20.31.1014" >"$d/fw_ver"
	echo "MT4123" >"$d/hca_type"
	echo "MT_0000000223" >"$d/board_id"
}
port() { # root ca n lid sm_lid state phys_state rate link_layer gid cap_mask
	d=$1/sys/class/infiniband/$2/ports/$3
	mkdir -p "$d/gids" "$d/pkeys"
	echo "$4" >"$d/lid"
	echo 0 >"$d/lid_mask_count"
	echo "$5" >"$d/sm_lid"
	echo 0 >"$d/sm_sl"
	echo "$6" >"$d/state"
	echo "$7" >"$d/phys_state"
	echo "$8" >"$d/rate"
	echo "$9" >"$d/link_layer"
	echo "${10}" >"$d/gids/0"
	echo "${11}" >"$d/cap_mask"
	echo 0xffff >"$d/pkeys/0"
}
umad() { # root K ca port
	for kind in umad issm; do
		d=$1/sys/class/infiniband_mad/$kind$2
		mkdir -p "$d"
		echo "$3" >"$d/ibdev"
		echo "$4" >"$d/port"
	done
	echo "231:$2" >"$1/sys/class/infiniband_mad/umad$2/dev"
	echo "5" >"$1/sys/class/infiniband_mad/abi_version"
}

rm -rf active roce switch down twocas mixed abi4 noumad empty reasons

# One CA, port 1 Active.
ca active mlx5_0 "1: CA" 0c42:a103:0067:a2b0 0c42:a103:0067:a2b0 "node1 HCA-1"
port active mlx5_0 1 0x1b 0x1 "4: ACTIVE" "5: LinkUp" "100 Gb/sec (4X EDR)" InfiniBand \
	fe80:0000:0000:0000:0c42:a103:0067:a2b0 0x2651e84a
umad active 0 mlx5_0 1

# A RoCE-only CA: Ethernet link layer, Active.
ca roce mlx5_0 "1: CA" 0c42:a103:0012:3456 0c42:a103:0012:3456 "roce1 mlx5_0"
port roce mlx5_0 1 0x0 0x0 "4: ACTIVE" "5: LinkUp" "25 Gb/sec (1X EDR)" Ethernet \
	fe80:0000:0000:0000:0e42:a1ff:fe12:3456 0x00010000
umad roce 0 mlx5_0 1

# A switch device (managed switch): only port 0.
ca switch switchib0 "2: switch" 7cfe:9003:0032:4a10 7cfe:9003:0032:4a10 "MF0;sw1:MSB7700/U1"
port switch switchib0 0 0x3 0x1 "4: ACTIVE" "5: LinkUp" "100 Gb/sec (4X EDR)" InfiniBand \
	fe80:0000:0000:0000:7cfe:9003:0032:4a10 0x0000004a
umad switch 0 switchib0 0

# A CA whose port 1 has no link and port 2 is Disabled.
ca down mlx4_0 "1: CA" 0002:c903:00a1:b2c0 0002:c903:00a1:b2c3 "node2 HCA-1"
port down mlx4_0 1 0x0 0x0 "1: DOWN" "2: Polling" "10 Gb/sec (4X)" InfiniBand \
	fe80:0000:0000:0000:0002:c903:00a1:b2c1 0x02514868
port down mlx4_0 2 0x0 0x0 "1: DOWN" "3: Disabled" "2.5 Gb/sec (1X SDR)" InfiniBand \
	fe80:0000:0000:0000:0002:c903:00a1:b2c2 0x02514868
umad down 0 mlx4_0 1
umad down 1 mlx4_0 2

# Two CAs; the umad numbering does not follow the CA/port order.
# mlx5_0: port 1 Init (LinkUp, no SM yet), port 2 Active. mlx5_1: port 1 Active.
ca twocas mlx5_0 "1: CA" 0c42:a103:0000:0010 0c42:a103:0000:0010 "node3 HCA-1"
port twocas mlx5_0 1 0x0 0x0 "2: INIT" "5: LinkUp" "200 Gb/sec (4X HDR)" InfiniBand \
	fe80:0000:0000:0000:0c42:a103:0000:0011 0x2651e848
port twocas mlx5_0 2 0x2a 0x1 "4: ACTIVE" "5: LinkUp" "200 Gb/sec (4X HDR)" InfiniBand \
	fe80:0000:0000:0000:0c42:a103:0000:0012 0x2651e848
ca twocas mlx5_1 "1: CA" 0c42:a103:0000:0020 0c42:a103:0000:0020 "node3 HCA-2"
port twocas mlx5_1 1 0x2b 0x1 "4: ACTIVE" "5: LinkUp" "56 Gb/sec (4X FDR)" InfiniBand \
	fe80:0000:0000:0000:0c42:a103:0000:0021 0x2651e848
umad twocas 0 mlx5_1 1
umad twocas 1 mlx5_0 2
umad twocas 2 mlx5_0 1

# A RoCE CA sorted first, then an IB CA whose only port is Init.
ca mixed mlx5_0 "1: CA" 0c42:a103:0000:0100 0c42:a103:0000:0100 "node4 mlx5_0"
port mixed mlx5_0 1 0x0 0x0 "4: ACTIVE" "5: LinkUp" "100 Gb/sec (4X EDR)" Ethernet \
	fe80:0000:0000:0000:0e42:a1ff:fe00:0100 0x00010000
ca mixed mlx5_1 "1: CA" 0c42:a103:0000:0200 0c42:a103:0000:0200 "node4 HCA-2"
port mixed mlx5_1 1 0x0 0x0 "2: INIT" "5: LinkUp" "100 Gb/sec (4X EDR)" InfiniBand \
	fe80:0000:0000:0000:0c42:a103:0000:0201 0x2651e848
umad mixed 0 mlx5_0 1
umad mixed 1 mlx5_1 1

# A kernel with an old user_mad ABI.
ca abi4 mthca0 "1: CA" 0002:c902:0020:0001 0002:c902:0020:0001 "old HCA-1"
port abi4 mthca0 1 0x5 0x1 "4: ACTIVE" "5: LinkUp" "10 Gb/sec (4X)" InfiniBand \
	fe80:0000:0000:0000:0002:c902:0020:0002 0x00000a6a
umad abi4 0 mthca0 1
echo 4 >abi4/sys/class/infiniband_mad/abi_version

# ib_umad not loaded: a CA but no infiniband_mad class.
ca noumad mlx5_0 "1: CA" 0c42:a103:0067:0001 0c42:a103:0067:0001 "node5 HCA-1"
port noumad mlx5_0 1 0x7 0x1 "4: ACTIVE" "5: LinkUp" "100 Gb/sec (4X EDR)" InfiniBand \
	fe80:0000:0000:0000:0c42:a103:0067:0001 0x2651e84a

# Nothing usable, each device for another reason: a RoCE CA, an IB CA
# with a port down and an SMI-less port, an Active port without a umad
# device, and an iWARP device (soft-iWARP).
ca reasons mlx5_0 "1: CA" 0c42:a103:0000:1000 0c42:a103:0000:1000 "node6 mlx5_0"
port reasons mlx5_0 1 0x0 0x0 "4: ACTIVE" "5: LinkUp" "100 Gb/sec (4X EDR)" Ethernet \
	fe80:0000:0000:0000:0e42:a1ff:fe00:1000 0x00010000
ca reasons mlx5_1 "1: CA" 0c42:a103:0000:2000 0c42:a103:0000:2000 "node6 HCA-2"
port reasons mlx5_1 1 0x0 0x0 "1: DOWN" "2: Polling" "10 Gb/sec (4X)" InfiniBand \
	fe80:0000:0000:0000:0c42:a103:0000:2001 0x2651e848
port reasons mlx5_1 2 0x9 0x1 "4: ACTIVE" "5: LinkUp" "200 Gb/sec (4X HDR)" InfiniBand \
	fe80:0000:0000:0000:0c42:a103:0000:2002 0x2651ec48
ca reasons mlx5_2 "1: CA" 0c42:a103:0000:3000 0c42:a103:0000:3000 "node6 HCA-3"
port reasons mlx5_2 1 0xa 0x1 "4: ACTIVE" "5: LinkUp" "200 Gb/sec (4X HDR)" InfiniBand \
	fe80:0000:0000:0000:0c42:a103:0000:3001 0x2651e848
ca reasons siw0 "4: RNIC" 5254:00ff:fe12:3456 5254:00ff:fe12:3456 "node6 siw0"
port reasons siw0 1 0x0 0x0 "4: ACTIVE" "5: LinkUp" "10 Gb/sec (1X QDR)" Ethernet \
	fe80:0000:0000:0000:5254:00ff:fe12:3456 0x00000000
umad reasons 0 mlx5_0 1
umad reasons 1 mlx5_1 1
umad reasons 2 mlx5_1 2

# No RDMA device at all.
mkdir -p empty/sys/class
touch empty/sys/class/.keep
