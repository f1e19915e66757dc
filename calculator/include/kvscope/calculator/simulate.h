#pragma once
// Serving real traffic: the engine's scheduler simulated step by step over the requests of traffic.h, on the KV
// budget its fit gives, with each step's time from the roofline the calculator already has. What it answers: the
// throughput, the latencies users see (TTFT, TPOT, ITL, end to end), the KV blocks in use over time against the
// budget, the prefix cache's hits, the preemptions; and the highest request rate that meets a latency target.
//
// The scheduler is vLLM's V1 (vllm/v1/core/sched/scheduler.py, Scheduler.schedule, as of v0.11, 2025-10), rule by
// rule in simulate.cpp with the file each follows (the step costs and settings: serving.h; the answers:
// simulation_report.h; the questions asked of it — a target, a curve, a plan: traffic_answer.h): continuous batching,
// chunked prefill within max_num_batched_tokens, max_num_seqs, paged blocks of block_size from the fit's budget,
// automatic prefix caching of full blocks with LRU eviction of free blocks, preemption by recompute.

#include <functional>
#include <vector>

#include "kvscope/calculator/result.h"
#include "kvscope/calculator/serving.h"
#include "kvscope/calculator/simulation_report.h"
#include "kvscope/calculator/traffic.h"

namespace kvscope {

// Called every few hundred steps with the share of the requests ended; false stops the simulation (an error
// "cancelled" under "simulate").
using SimulationProgress = std::function<bool(double fraction)>;

Result<SimulationReport> simulate_serving(const std::vector<TrafficRequest>& requests, const ServingSettings& settings,
                                          const StepCost& cost, const SimulationProgress& progress = {});

}  // namespace kvscope
