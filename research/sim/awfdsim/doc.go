// Package awfdsim is the flow-level simulation of Spotlight's evaluation
// (shared/papers/spotlight-awfd.txt §V-A, Fig. 8 and Fig. 10): service
// utilisation Ω of ECMP, WCMP, LCF, AWFD (m classes) and the heuristic
// optimum against the update interval, and of AWFD against m.
//
// Model, at the paper's scale (nothing is scaled down): 100,000 flows with
// Poisson arrivals (mean gap 1 ms) and exponential durations (mean 10 s);
// each flow asks a rate drawn from a Pareto law (α = 2, mean 2 KB/s) and
// traverses a service chain of 1–4 distinct services (uniform) out of 4
// VIPs of 100 DIPs each, half of capacity c and half 2c (1:2), c chosen so
// that the mean demand is 5% above the services' capacity ("slightly
// more", as the paper).
//
// A DIP carries min(demand, capacity) and Ω of a VIP is carried / capacity,
// integrated over time from the end of a 20 s warm-up to the last arrival
// (the drain after it would only measure an emptying system), averaged over
// the 4 VIPs. Every DIP of a chain is charged the flow's full asked rate
// (the paper's "reduced rate" is not fed back along the chain): a flow
// slowed at one hop still asks for its rate at the others. The available
// capacity the dispatchers see is max(capacity − demand, 0), sampled at
// every update (LCF, AWFD) or at each arrival (the heuristic optimum).
//
// AWFD here is the product's code: capacities are quantised by awfd.Weights,
// the record built by awfd.Build, and each new flow placed by
// Record.Select on a random 32-bit hash — the mux's Algorithm 1.
package awfdsim
