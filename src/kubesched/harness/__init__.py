"""What our own tests, benchmarks and tools run against: a real control plane, the differential and
fault harnesses, fake nodes, test certificates and ports. Not shipped in the wheel; nothing in
kubesched imports it."""
