# ns-2.35 dumbbell for the conformance harness (scripts/peers/ns2/harness.py).
#
#   ns dumbbell.tcl key=value ...
#
# Sources s_i -- r1 == r2 -- d_i: access links (acc_bw, acc_delay, acc_q) on both sides, a
# drop-tail bottleneck r1 -> r2 (bw, delay, q). One stock one-way agent per flow
# (Agent/TCP/Reno, Agent/TCP/Newreno, Agent/TCP/Sack1) with an FTP source started at its
# entry of `starts` (seconds, comma separated), and its stock sink (TCPSink, TCPSink/DelAck,
# TCPSink/Sack1, TCPSink/Sack1/DelAck). Optional Bernoulli loss on the forward data path,
# placed at `loss_at`:
#   entry - `$ns lossmodel` on each access link s_i -> r1: ns-2 puts the ErrorModel at the head
#           of the link (`SimpleLink errormodule` -> `add-to-head`), before that link's queue,
#           so packets are lost before the bottleneck queue, as the simulator's `loss` does;
#   exit  - `$ns link-lossmodel` on the bottleneck (`insert-linkloss`): after its queue and
#           transmission, so lost packets have used the bottleneck.
#
# Optional UDP background (`udp_rate` > 0, bits/s while on): one more sender/receiver pair with an
# Application/Traffic/Exponential source (`udp_on`, `udp_off` mean seconds, `udp_size`-byte packets)
# over Agent/UDP, started at the entry of `starts` after the TCP flows'.
#
# Seeds: `$defaultRNG seed N` would make every later RNG stream N times the same MRG32k3a state
# (the generator is linear), so the loss draws of seeds 1, 2, 3, ... are correlated (seeds
# 1-12 drew 0.81% losses at p = 1% over their first 2400 packets). Instead the default package
# seed is kept and every RNG moves to substream N-1 (`next-substream`), ns-2's way of getting
# independent replications.
# Prints one JSON object on stdout; no trace files are written.

set opt(cc) Sack1
set opt(delack) 0
set opt(flows) 1
set opt(bw) 10Mb
set opt(delay) 20ms
set opt(q) 100
set opt(acc_bw) 100Mb
set opt(acc_delay) 1ms
set opt(acc_q) 1000
set opt(loss) 0
set opt(loss_at) entry
set opt(minrto) 0.2
set opt(size) 1000
set opt(window) 4194
set opt(duration) 60
set opt(warmup) 5
set opt(seed) 1
set opt(starts) ""
set opt(windowInit) ""
set opt(maxburst) ""
set opt(udp_rate) 0
set opt(udp_on) 0.5
set opt(udp_off) 0.5
set opt(udp_size) 1000
set opt(trace) ""
set opt(trace_flow) 0

foreach a $argv {
    set kv [split $a =]
    set k [lindex $kv 0]
    if {![info exists opt($k)]} { puts stderr "unknown option $k"; exit 2 }
    set opt($k) [join [lrange $kv 1 end] =]
}

set ns [new Simulator]
global defaultRNG
proc to_substream {rng} {
    global opt
    for {set k 1} {$k < $opt(seed)} {incr k} { $rng next-substream }
}
to_substream $defaultRNG

Agent/TCP set minrto_ $opt(minrto)
Agent/TCP set packetSize_ $opt(size)
Agent/TCP set window_ $opt(window)
if {$opt(windowInit) ne ""} { Agent/TCP set windowInit_ $opt(windowInit) }
if {$opt(maxburst) ne ""} { Agent/TCP set maxburst_ $opt(maxburst) }

set r1 [$ns node]
set r2 [$ns node]
$ns duplex-link $r1 $r2 $opt(bw) $opt(delay) DropTail
$ns queue-limit $r1 $r2 $opt(q)
$ns queue-limit $r2 $r1 $opt(q)

proc loss_module {rate bw} {
    set em [new ErrorModel]
    $em unit pkt
    $em set rate_ $rate
    # With an upstream queue handler (not the case at a link head) a dropped packet holds that
    # queue for uniform(0, size*8/bandwidth_); set it to the link's own rate.
    $em set bandwidth_ $bw
    set rv [new RandomVariable/Uniform]
    set rng [new RNG]
    to_substream $rng
    $rv use-rng $rng
    $em ranvar $rv
    $em drop-target [new Agent/Null]
    return $em
}

if {$opt(loss) > 0 && $opt(loss_at) eq "exit"} {
    set em [loss_module $opt(loss) $opt(bw)]
    $ns link-lossmodel $em $r1 $r2
    # insert-linkloss hands losses to the link's drop head, which the queue monitor would count
    # as queue drops; keep them apart.
    $em drop-target [new Agent/Null]
}

switch $opt(cc) {
    Reno { set agent Agent/TCP/Reno }
    Newreno { set agent Agent/TCP/Newreno }
    Sack1 { set agent Agent/TCP/Sack1 }
    default { puts stderr "cc must be Reno, Newreno or Sack1"; exit 2 }
}
if {$opt(cc) eq "Sack1"} { set sinkc Agent/TCPSink/Sack1 } else { set sinkc Agent/TCPSink }
if {$opt(delack)} { set sinkc $sinkc/DelAck }

set starts [split $opt(starts) ,]
for {set i 0} {$i < $opt(flows)} {incr i} {
    set s($i) [$ns node]
    set d($i) [$ns node]
    $ns duplex-link $s($i) $r1 $opt(acc_bw) $opt(acc_delay) DropTail
    $ns duplex-link $r2 $d($i) $opt(acc_bw) $opt(acc_delay) DropTail
    foreach {a b} [list $s($i) $r1 $r1 $s($i) $r2 $d($i) $d($i) $r2] { $ns queue-limit $a $b $opt(acc_q) }
    if {$opt(loss) > 0 && $opt(loss_at) eq "entry"} {
        $ns lossmodel [loss_module $opt(loss) $opt(acc_bw)] $s($i) $r1
    }
    set tcp($i) [new $agent]
    $tcp($i) set fid_ $i
    set sink($i) [new $sinkc]
    $ns attach-agent $s($i) $tcp($i)
    $ns attach-agent $d($i) $sink($i)
    $ns connect $tcp($i) $sink($i)
    set ftp($i) [new Application/FTP]
    $ftp($i) attach-agent $tcp($i)
    set t [lindex $starts $i]
    if {$t eq ""} { set t 0.0 }
    $ns at $t "$ftp($i) start"
}

if {$opt(udp_rate) > 0} {
    set us [$ns node]
    set ud [$ns node]
    $ns duplex-link $us $r1 $opt(acc_bw) $opt(acc_delay) DropTail
    $ns duplex-link $r2 $ud $opt(acc_bw) $opt(acc_delay) DropTail
    foreach {a b} [list $us $r1 $r1 $us $r2 $ud $ud $r2] { $ns queue-limit $a $b $opt(acc_q) }
    set udp [new Agent/UDP]
    $udp set fid_ $opt(flows)
    set unull [new Agent/Null]
    $ns attach-agent $us $udp
    $ns attach-agent $ud $unull
    $ns connect $udp $unull
    set onoff [new Application/Traffic/Exponential]
    $onoff set packetSize_ $opt(udp_size)
    $onoff set burst_time_ $opt(udp_on)
    $onoff set idle_time_ $opt(udp_off)
    $onoff set rate_ $opt(udp_rate)
    $onoff attach-agent $udp
    set t [lindex $starts $opt(flows)]
    if {$t eq ""} { set t 0.0 }
    $ns at $t "$onoff start"
}

# Optional variable trace of one flow (`trace=PATH`, `trace_flow=i`): ns-2 writes a line per change of
# each traced variable (time, agent, name, value). For finding where the simulators diverge; keep the
# file outside the repository.
if {$opt(trace) ne ""} {
    set tf [open $opt(trace) w]
    set tr $tcp($opt(trace_flow))
    $tr attach $tf
    foreach v {cwnd_ ssthresh_ t_seqno_ highest_ack_ dupacks_ maxseq_ nrexmit_ ncwndcuts_ t_backoff_ t_rtt_ t_srtt_} {
        $tr trace $v
    }
}

set qf [open /dev/null w]
set qmon [$ns monitor-queue $r1 $r2 $qf 1.0]
set pint [$qmon get-pkts-integrator]

proc snapshot {tag} {
    global opt tcp qmon pint snap
    for {set i 0} {$i < $opt(flows)} {incr i} {
        set snap($tag,ack,$i) [$tcp($i) set ack_]
        set snap($tag,data,$i) [$tcp($i) set ndatapack_]
        set snap($tag,rexmit,$i) [$tcp($i) set nrexmitpack_]
    }
    set snap($tag,qsum) [$pint set sum_]
    set snap($tag,pdrops) [$qmon set pdrops_]
    set snap($tag,pdep) [$qmon set pdepartures_]
    set snap($tag,bdep) [$qmon set bdepartures_]
}

proc finish {} {
    global opt tcp snap qmon pint ns
    snapshot end
    set span [expr {$opt(duration) - $opt(warmup)}]
    set flows {}
    set agg 0.0
    for {set i 0} {$i < $opt(flows)} {incr i} {
        set a0 $snap(warm,ack,$i)
        if {$a0 < 0} { set a0 0 }
        set bytes [expr {($snap(end,ack,$i) - $a0) * double($opt(size))}]
        set g [expr {$bytes * 8.0 / $span}]
        set agg [expr {$agg + $g}]
        # timeouts: whole run; data and retransmitted packets: after the warm-up (as ackshape).
        # cwnd cuts (`ncwndcuts_`): fast retransmits plus timeouts (no ECN here).
        lappend flows [format {{"goodput_bps": %.3f, "timeouts": %d, "cwnd_cuts": %d, "data_pkts": %d, "rexmit_pkts": %d}} \
            $g [$tcp($i) set nrexmit_] [$tcp($i) set ncwndcuts_] [expr {$snap(end,data,$i) - $snap(warm,data,$i)}] \
            [expr {$snap(end,rexmit,$i) - $snap(warm,rexmit,$i)}]]
    }
    set qavg [expr {($snap(end,qsum) - $snap(warm,qsum)) / $span}]
    puts [format {{"aggregate_goodput_bps": %.3f, "queue_avg_pkts": %.4f, "drops": %d, "drops_after_warmup": %d, "bottleneck_tx_pkts": %d, "bottleneck_tx_bytes_after_warmup": %.0f, "flows": [%s]}} \
        $agg $qavg [$qmon set pdrops_] [expr {$snap(end,pdrops) - $snap(warm,pdrops)}] [$qmon set pdepartures_] \
        [expr {double($snap(end,bdep)) - $snap(warm,bdep)}] [join $flows ", "]]
    if {$opt(trace) ne ""} { global tf; flush $tf; close $tf }
    # Wall time of `$ns run` alone (the event loop, without interpreter start-up and set-up),
    # on stderr so that stdout stays one JSON object.
    global run_t0
    puts stderr [format {{"run_wall_s": %.6f}} [expr {([clock microseconds] - $run_t0) * 1e-6}]]
    exit 0
}

$ns at $opt(warmup) "snapshot warm"
$ns at $opt(duration) "finish"
set run_t0 [clock microseconds]
$ns run
