package main

// Every strategy is built into the lab's command (its mux, the simulations
// and the benchmarks run the layers in this process).
import _ "github.com/beamer-lb/beamer/pkg/strategy/all"
