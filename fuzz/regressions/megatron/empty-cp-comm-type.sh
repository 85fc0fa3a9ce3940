TP=${TP:-4}
A=(
 "--tensor-model-parallel-size $TP" --swiglu
)
--num-layers 8 --hidden-size 512 --num-attention-heads 8 --seq-length 128 --micro-batch-size 1 ${A[@]} --context-parallel-size 2 --cp-comm-type= allgather \
 --recompute-activations # c
