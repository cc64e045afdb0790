// Package hashsim reproduces the papers' comparisons of bucket assignment
// algorithms — Beamer's Table 1, fragmentation table and defragmentation run
// (Beamer appendix), Maglev's balance, resilience and build-time figures
// (Maglev §5.3) and Beamer's controller scale test (§6.4) — on the
// algorithms of package assign. `beamer-lab sim hashing` prints its Report.
//
// Every experiment is seeded and deterministic except the timings.
package hashsim
