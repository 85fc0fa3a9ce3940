# timeline.gp - one training step as a Gantt chart: a track per rank and stream, a box per op,
# coloured by op class (simpar plot timeline TRACE.json -o FILE [--ranks A..B] [--mode M]).
#
# simpar sets, in a file of assignments gnuplot runs before this script (app/plot/plot.c):
#   datafile    one block per op class: track start end (time_unit from the first event);
#               one block of track names: track "name" (the y tic labels); then, when
#               n_labels > 0, one block of labels: x track "name" (the boxes wide enough)
#   outfile     the image to write
#   fmt         "png" or "svg"
#   title_text  the plot's title
#   n_series, series_1, series_2, ...   the op classes, in block order
#   n_tracks    the tracks (rank, stream), 0 at the top
#   n_labels    the lines of the labels block (0: no block)
#
# Names from the trace are data only: read with ytic() and `with labels`, never eval'd.
#   rank_bounds the y between two ranks' tracks, separated by spaces ("2.5 5.5 ...")
#   time_unit   "ms" or "us"
#   height      the image height in pixels

if (fmt eq "svg") {
    set terminal svg size 1500,height dynamic font "Helvetica,15" noenhanced
} else {
    set terminal pngcairo size 1500,height font "Helvetica,13" noenhanced
}
set encoding utf8
set output outfile

class(i) = value(sprintf("series_%d", i))
colour(c) = c eq "forward (layer blocks)" ? "#d4d4d4" : \
            c eq "backward (layer blocks)" ? "#a9a9a9" : \
            c eq "GEMM" ? "#4e79a7" : c eq "attention" ? "#76b7b2" : \
            c eq "other kernels" ? "#a0cbe8" : c eq "embedding + loss" ? "#8cd17d" : \
            c eq "optimizer" ? "#9c755f" : c eq "TP collective" ? "#e15759" : \
            c eq "CP collective" ? "#ff9da7" : \
            c eq "DP collective" ? "#f28e2b" : c eq "pipeline p2p" ? "#b07aa1" : \
            c eq "waiting" ? "#eeeeee" : "#bab0ac"

# the title from the picture's left edge, above the plot: centred over the plot area beside
# an outside key, a long title ran off the picture's left edge
set tmargin 3.5
set label 9999 title_text at screen 0.01, graph 1 offset 0, 2 left font ",15" front
set ytics scale 0 font ",11"
set yrange [n_tracks - 0.5:-0.5]
set xrange [0:*]
set xlabel sprintf("time from the first op drawn (%s)", time_unit)
set ylabel "rank and stream"
set grid xtics mxtics lc rgb "#dddddd"
set mxtics
set key outside right top vertical box samplen 1.5 reverse Left
set style fill solid 0.9 noborder
do for [j=1:words(rank_bounds)] {
    set arrow from graph 0, first word(rank_bounds, j) + 0 to graph 1, first word(rank_bounds, j) + 0 \
        nohead lc rgb "#999999" lw 1 back
}
plot for [i=1:n_series] datafile index (i - 1) using (($2 + $3) / 2):1:(($3 - $2) / 2):(0.4) \
         with boxxyerror lc rgb colour(class(i)) title class(i), \
     datafile index n_series using (NaN):1:ytic(2) notitle, \
     for [j=1:(n_labels > 0)] datafile index (n_series + 1) using 1:2:3 with labels font ",9" \
         tc rgb "#ffffff" notitle
