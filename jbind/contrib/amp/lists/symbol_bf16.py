"""MXNet 1.9.1's AMP op lists for target dtype bfloat16, restricted to the ops jbind registers
(names, aliases included, as MXNet lists them; a name jbind lacks is left out)."""

# Run in bfloat16: their inputs are cast to it.
BF16_FUNCS = tuple("""
    Convolution FullyConnected""".split())

# Run in whatever dtype they get (float32 or bfloat16): left alone.
BF16_FP32_FUNCS = tuple("""
    abs _add BatchNorm clip Concat concat LRN Pooling relu shuffle _shuffle sqrt square tanh""".split())

# Run in float32 (overflow or precision): their inputs are cast to it.
FP32_FUNCS = tuple("""
    Deconvolution RNN BilinearSampler BlockGrad Cast cast cast_storage Crop Dropout Embedding
    Flatten GridGenerator Pad Pooling_v1 ROIPooling Reshape SequenceLast SequenceMask
    SequenceReverse SliceChannel SpatialTransformer SwapAxis UpSampling _DivScalar _EqualScalar
    _GreaterScalar _GreaterEqualScalar _LesserScalar _LesserEqualScalar _MaximumScalar
    _MinimumScalar _MinusScalar _ModScalar _MulScalar _NotEqualScalar _PlusScalar _RMinusScalar
    _RModScalar _arange _contrib_AdaptiveAvgPooling2D _contrib_BilinearResize2D
    _contrib_bipartite_matching _contrib_div_sqrt_dim _contrib_gradientmultiplier
    _contrib_index_copy _copy _div_scalar _equal_scalar _full _greater_scalar
    _greater_equal_scalar _lesser_scalar _lesser_equal_scalar _maximum_scalar _minimum_scalar
    _minus_scalar _mod_scalar _mul_scalar _not_equal_scalar _ones _plus_scalar
    _random_exponential _random_exponential_like _random_gamma _random_gamma_like
    _random_generalized_negative_binomial _random_generalized_negative_binomial_like
    _random_negative_binomial _random_negative_binomial_like _random_normal _random_normal_like
    _random_poisson _random_poisson_like _random_randint _random_uniform _random_uniform_like
    _ravel_multi_index _rminus_scalar _rmod_scalar _sample_exponential _sample_gamma
    _sample_generalized_negative_binomial _sample_multinomial _sample_negative_binomial
    _sample_normal _sample_poisson _sample_uniform _split_v2 _unravel_index _zeros adam_update
    arccosh arcsinh arctan argmax argmax_channel argmin batch_take broadcast_axes broadcast_axis
    broadcast_like broadcast_to cbrt ceil cos crop degrees depth_to_space diag erf expand_dims
    fix flatten flip floor ftml_update ftrl_update gather_nd hard_sigmoid identity logical_not
    max_axis max min min_axis mp_sgd_mom_update mp_sgd_update negative normal one_hot ones_like
    pad pick radians random_exponential random_gamma random_generalized_negative_binomial
    random_negative_binomial random_normal random_poisson random_randint random_uniform
    ravel_multi_index repeat reshape reshape_like reverse rint rmsprop_update rmspropalex_update
    round sample_exponential sample_gamma sample_generalized_negative_binomial
    sample_multinomial sample_negative_binomial sample_normal sample_poisson sample_uniform
    scatter_nd sgd_mom_update sgd_update shape_array sigmoid sign signsgd_update signum_update
    sin size_array slice slice_axis slice_like softsign sort space_to_depth split squeeze
    stop_gradient swapaxes take tile transpose trunc uniform unravel_index zeros_like
    broadcast_mul Convolution_v1 IdentityAttachKLSparseReg arccos arcsin cosh erfinv sinh tan
    arctanh exp expm1 log log10 log2 log1p broadcast_power reciprocal _RDivScalar _rdiv_scalar
    rsqrt rcbrt _Power _PowerScalar _power _power_scalar _RPowerScalar _rpower_scalar
    linalg_sumlogdiag _Hypot _HypotScalar _hypot _hypot_scalar broadcast_hypot _square_sum sum
    sum_axis nansum prod nanprod mean norm softmin khatri_rao moments gamma gammaln
    _linalg_gelqf _linalg_gemm _linalg_gemm2 _linalg_potrf _linalg_potri _linalg_sumlogdiag
    _linalg_syevd _linalg_syrk _linalg_trmm _linalg_trsm _linalg_makediag _linalg_extractdiag
    _linalg_maketrian _linalg_extracttrian _linalg_inverse _linalg_det _linalg_slogdet
    linalg_syrk linalg_potrf linalg_potri linalg_gemm2 linalg_gemm linalg_gelqf linalg_trmm
    linalg_trsm linalg_makediag linalg_extractdiag linalg_maketrian linalg_extracttrian
    linalg_inverse linalg_det linalg_slogdet _contrib_SyncBatchNorm argsort topk SoftmaxOutput
    softmax Softmax log_softmax InstanceNorm LayerNorm GroupNorm L2Normalization
    SoftmaxActivation LinearRegressionOutput LogisticRegressionOutput MAERegressionOutput
    SVMOutput softmax_cross_entropy smooth_l1 MakeLoss make_loss Custom CTCLoss _contrib_CTCLoss
    _contrib_ctc_loss ctc_loss""".split())

# Run in float32 when a parameter has one of the values: (op, parameter, values).
CONDITIONAL_FP32_FUNCS = (
    ('Activation', 'act_type', ['softrelu']),
    ('LeakyReLU', 'act_type', ['elu', 'selu']),
)

# Several inputs that must share one dtype: cast to the widest of them.
WIDEST_TYPE_CASTS = tuple("""
    _Plus _plus _Minus _sub _Mul _Div _div _Mod _Not_Equal _Equal _equal _Greater _greater
    _Greater_Equal _greater_equal _Lesser _Lesser_Equal _lesser _lesser_equal _maximum _minimum
    _minus _mod _mul _not_equal Correlation ElementWiseSum add_n batch_dot broadcast_add
    broadcast_plus broadcast_div broadcast_equal broadcast_greater broadcast_greater_equal
    broadcast_lesser broadcast_lesser_equal broadcast_logical_and broadcast_logical_or
    broadcast_logical_xor broadcast_maximum broadcast_minimum broadcast_minus broadcast_mod
    broadcast_not_equal broadcast_sub dot elemwise_add elemwise_div elemwise_mul elemwise_sub
    stack _Maximum _Minimum _contrib_MultiBoxPrior _contrib_ROIAlign _contrib_box_iou
    _contrib_box_nms _contrib_box_non_maximum_suppression where random_pdf_gamma
    random_pdf_exponential random_pdf_uniform random_pdf_negative_binomial
    random_pdf_generalized_negative_binomial random_pdf_dirichlet random_pdf_normal
    random_pdf_poisson _random_pdf_gamma _random_pdf_exponential _random_pdf_uniform
    _random_pdf_negative_binomial _random_pdf_generalized_negative_binomial
    _random_pdf_dirichlet _random_pdf_normal _random_pdf_poisson""".split())

# Loss heads whose gradient the dynamic loss scale multiplies (mx.nd).
LOSS_OUTPUT_FUNCTIONS = tuple("""
    SoftmaxOutput LinearRegressionOutput LogisticRegressionOutput MAERegressionOutput""".split())

# Inputs (by name) that stay float32 when these ops run in bfloat16.
BF16_USE_FP32_PARAMS = {
    'BatchNorm': ('gamma', 'beta', 'moving_mean', 'moving_var'),
}
