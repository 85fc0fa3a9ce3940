# scaling.gp - how a sweep scales: the best step time and the best throughput against the GPU
# count, one line per tensor-parallel mode, two panels side by side
# (simpar plot scaling SWEEP.csv -o FILE.png|FILE.svg).
#
# simpar sets, in a file of assignments gnuplot runs before this script (app/plot/plot.c):
#   datafile    one block per mode, GPUs ascending: gpus best_step_time_s best_tokens_per_s
#               (the smallest step time and the largest tokens/s over the rows with status ok)
#   outfile     the image to write
#   fmt         "png" or "svg"
#   title_text  the plot's title
#   n_series, series_1, series_2, ...   the modes, in block order
#   ideal_gpus, ideal_tokens_per_s      the best throughput at the fewest GPUs: the start of
#               the linear-scaling line

if (fmt eq "svg") {
    set terminal svg size 1500,720 dynamic font "Helvetica,15" noenhanced
} else {
    set terminal pngcairo size 1500,720 font "Helvetica,13" noenhanced
}
set encoding utf8
set output outfile

mode(i) = value(sprintf("series_%d", i))
# a series is a mode ("3d") or a mode and a model shape ("3d h=8192"): one colour per series then
base(m) = word(m, 1)
shape(m) = words(m) > 1 ? " ".word(m, 2) : ""
series_colour(i) = word("#4e79a7 #f28e2b #59a14f #e15759 #76b7b2 #edc948 #b07aa1 #ff9da7 #9c755f #bab0ac", (i - 1) % 10 + 1)
lc_of(i) = words(mode(i)) > 1 ? series_colour(i) : colour(mode(i))
colour(m) = m eq "1d" ? "#4e79a7" : m eq "2d" ? "#f28e2b" : m eq "2.5d" ? "#59a14f" : \
            m eq "3d" ? "#e15759" : "#76b7b2"
marker(m) = m eq "1d" ? 7 : m eq "2d" ? 5 : m eq "2.5d" ? 9 : m eq "3d" ? 11 : 13
legend(m) = m eq "1d" ? "1-D (Megatron)" : m eq "2d" ? "2-D (SUMMA)" : \
            m eq "2.5d" ? "2.5-D (Tesseract)" : m eq "3d" ? "3-D" : m

set multiplot layout 1,2 title title_text font ",16" margins 0.07,0.98,0.12,0.86 spacing 0.08,0
set logscale x 2
set logscale y
set format x "%g"
set xlabel "GPUs"
set grid xtics ytics mytics lc rgb "#dddddd"
set key box opaque samplen 2 reverse Left

set title "step time of the best configuration (lower is better)"
set ylabel "step time (s)"
set key top right
plot for [i=1:n_series] datafile index (i-1) using 1:2 with linespoints lw 2.5 ps 1.4 \
         pt marker(base(mode(i))) lc rgb lc_of(i) title legend(base(mode(i))).shape(mode(i))

set title "throughput of the best configuration (higher is better)"
set ylabel "throughput (tokens/s)"
set format y "%.0s%c"
set key top left
plot ideal_tokens_per_s * x / ideal_gpus with lines dt 2 lw 1.5 lc rgb "#888888" \
         title sprintf("linear scaling from %g GPUs", ideal_gpus), \
     for [i=1:n_series] datafile index (i-1) using 1:3 with linespoints lw 2.5 ps 1.4 \
         pt marker(base(mode(i))) lc rgb lc_of(i) title legend(base(mode(i))).shape(mode(i))
unset multiplot
