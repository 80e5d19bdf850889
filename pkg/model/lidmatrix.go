package model

import (
	"errors"
	"fmt"
)

// NoPath is the hop count of a LID that cannot be reached (OSM_NO_PATH).
const NoPath uint8 = 0xFF

// ErrPortRange: a port number outside 0..NumPorts of a LID matrix.
var ErrPortRange = errors.New("port number out of range")

// LIDMatrix holds, for one switch, the number of hops from each of its
// ports to each LID, as OpenSM's osm_lid_matrix does. Column 0 holds the
// least hop count over all ports and is lowered whenever Set stores a
// smaller value (it is never raised: as in OpenSM, raising an entry leaves
// column 0 as it was).
//
// Storage is one contiguous byte slice of rows, one byte per element and
// NumPorts+1 bytes per row. Rows are allocated only for LIDs that were
// Set, so a matrix holding the few switch LIDs of a large subnet stays
// small; a LID without a row reads as NoPath in every column. A small
// index maps each LID up to MaxLID to its row.
//
// A LIDMatrix is not safe for concurrent writes. Once built, any number
// of goroutines may read it concurrently (Get, LeastHops, Row, ...).
type LIDMatrix struct {
	width int      // NumPorts+1
	index []uint32 // LID -> row+1, 0 when the LID has no row
	lids  []uint16 // row -> LID
	data  []byte   // len(lids)*width elements, row-major

	// shared is true while index and lids are shared with other matrices
	// built by ComputeHops; the first new row copies them.
	shared bool
}

// NewLIDMatrix returns an empty matrix for a switch with numPorts ports
// (columns 0..numPorts).
func NewLIDMatrix(numPorts int) *LIDMatrix {
	m := new(LIDMatrix)
	m.Init(numPorts)
	return m
}

// Init empties m and sets its number of ports (columns 0..numPorts;
// values outside 0..254 are clamped).
func (m *LIDMatrix) Init(numPorts int) {
	if numPorts < 0 {
		numPorts = 0
	}
	if numPorts > 254 {
		numPorts = 254
	}
	*m = LIDMatrix{width: numPorts + 1}
}

// NumPorts returns the number of ports (the matrix has NumPorts+1 columns).
func (m *LIDMatrix) NumPorts() int { return m.width - 1 }

// MaxLID returns the largest LID the matrix can index without growing
// (0 for an empty matrix).
func (m *LIDMatrix) MaxLID() uint16 {
	if len(m.index) == 0 {
		return 0
	}
	return uint16(len(m.index) - 1)
}

// NumRows returns the number of LIDs that have a row.
func (m *LIDMatrix) NumRows() int { return len(m.lids) }

// SetMinLIDSize makes m able to index LIDs up to lid (osm_lid_matrix_
// set_min_lid_size). It does not allocate rows.
func (m *LIDMatrix) SetMinLIDSize(lid uint16) {
	if int(lid) < len(m.index) {
		return
	}
	m.unshare()
	n := int(lid) + 1
	if n <= cap(m.index) {
		m.index = m.index[:n]
		return
	}
	c := 2 * cap(m.index)
	if c < n {
		c = n
	}
	if c > 0x10000 {
		c = 0x10000
	}
	idx := make([]uint32, n, c)
	copy(idx, m.index)
	m.index = idx
}

// Get returns the hop count from port to lid, NoPath for a LID without a
// row or a port out of range.
func (m *LIDMatrix) Get(lid uint16, port int) uint8 {
	if uint(port) >= uint(m.width) || int(lid) >= len(m.index) {
		return NoPath
	}
	r := m.index[lid]
	if r == 0 {
		return NoPath
	}
	return m.data[int(r-1)*m.width+port]
}

// LeastHops returns the least hop count to lid over all ports (column 0).
func (m *LIDMatrix) LeastHops(lid uint16) uint8 { return m.Get(lid, 0) }

// Row returns the row of lid (NumPorts+1 elements, column 0 first), or nil
// when lid has no row. The slice aliases the matrix: do not modify it.
func (m *LIDMatrix) Row(lid uint16) []byte {
	if int(lid) >= len(m.index) {
		return nil
	}
	r := m.index[lid]
	if r == 0 {
		return nil
	}
	o := int(r-1) * m.width
	return m.data[o : o+m.width : o+m.width]
}

// Set stores hops for (lid, port), allocating the LID's row (all NoPath)
// if needed, and lowers column 0 when hops is smaller than it.
func (m *LIDMatrix) Set(lid uint16, port int, hops uint8) error {
	if uint(port) >= uint(m.width) {
		return fmt.Errorf("lid matrix: port %d of %d: %w", port, m.width-1, ErrPortRange)
	}
	row := m.rowFor(lid)
	row[port] = hops
	if hops < row[0] {
		row[0] = hops
	}
	return nil
}

// RowLIDs returns the LIDs that have a row, in the order their rows were
// allocated. The slice aliases the matrix: do not modify it.
func (m *LIDMatrix) RowLIDs() []uint16 { return m.lids }

// Reset sets every element of every row to NoPath, keeping the rows.
func (m *LIDMatrix) Reset() {
	for i := range m.data {
		m.data[i] = NoPath
	}
}

// rowFor returns the row of lid, allocating it.
func (m *LIDMatrix) rowFor(lid uint16) []byte {
	if int(lid) < len(m.index) {
		if r := m.index[lid]; r != 0 {
			o := int(r-1) * m.width
			return m.data[o : o+m.width]
		}
	}
	m.SetMinLIDSize(lid)
	m.unshare()
	m.lids = append(m.lids, lid)
	m.index[lid] = uint32(len(m.lids))
	o := len(m.data)
	m.data = growRows(m.data, m.width)
	return m.data[o : o+m.width]
}

// growRows appends one row of NoPath to data.
func growRows(data []byte, width int) []byte {
	o := len(data)
	if o+width > cap(data) {
		c := 2 * cap(data)
		if c < o+width {
			c = o + width
		}
		// keep the capacity a whole number of rows
		c = (c + width - 1) / width * width
		d := make([]byte, o, c)
		copy(d, data)
		data = d
	}
	data = data[:o+width]
	for i := o; i < o+width; i++ {
		data[i] = NoPath
	}
	return data
}

// unshare gives m its own copy of a shared row index.
func (m *LIDMatrix) unshare() {
	if !m.shared {
		return
	}
	m.index = append([]uint32(nil), m.index...)
	m.lids = append([]uint16(nil), m.lids...)
	m.shared = false
}
