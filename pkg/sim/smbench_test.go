package sim

import "testing"

// BenchmarkRunSM20k runs the SM on the 20,727-node 3-level fat tree
// (fattree:levels=3,radix=42: 1,323 switches, 18,522 hosts).
func BenchmarkRunSM20k(b *testing.B) {
	f := genFabric(b, "fattree:levels=3,radix=42")
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if err := f.RunSM(""); err != nil {
			b.Fatal(err)
		}
	}
}
