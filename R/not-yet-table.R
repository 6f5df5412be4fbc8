# keras3's exports that mirrored does not implement yet, one per line:
#   name | keras3's arguments (or <object>) | family (R/not-yet.R)
# Rows come from `Rscript tools/keras3-exports.R <keras3 checkout> --stubs`
# (keras3 1.5.1.9000, 792 exports). A row goes when its function lands; the
# table only shrinks. tests/testthat/test-keras3-exports.R checks that every
# keras3 export is either implemented or here, with keras3's arguments.
not_yet_table <- r"---(
%as% | ... | surface
%py_class% | spec, body | python
op_subset<- | x, ..., value | surface
. | ... | surface
Constraint | classname, call = NULL, get_config = NULL, ..., public = list(), private = list(), inherit = NULL, parent_env = parent.frame() | surface
activation_celu | x, alpha = 1 | later
activation_glu | x, axis = -1L | later
activation_hard_shrink | x, threshold = 0.5 | later
activation_hard_tanh | x | later
activation_log_sigmoid | x | later
activation_soft_shrink | x, threshold = 0.5 | later
activation_sparse_plus | x | later
activation_sparse_sigmoid | x | later
activation_sparsemax | x, axis = -1L | later
activation_squareplus | x, b = 4L | later
activation_tanh_shrink | x | later
activation_threshold | x, threshold, default_value | later
all_dims | ... | surface
application_convnext_base | include_top = TRUE, include_preprocessing = TRUE, weights = "imagenet", input_tensor = NULL, input_shape = NULL, pooling = NULL, classes = 1000L, classifier_activation = "softmax", name = "convnext_base" | images
application_convnext_large | include_top = TRUE, include_preprocessing = TRUE, weights = "imagenet", input_tensor = NULL, input_shape = NULL, pooling = NULL, classes = 1000L, classifier_activation = "softmax", name = "convnext_large" | images
application_convnext_small | include_top = TRUE, include_preprocessing = TRUE, weights = "imagenet", input_tensor = NULL, input_shape = NULL, pooling = NULL, classes = 1000L, classifier_activation = "softmax", name = "convnext_small" | images
application_convnext_tiny | include_top = TRUE, include_preprocessing = TRUE, weights = "imagenet", input_tensor = NULL, input_shape = NULL, pooling = NULL, classes = 1000L, classifier_activation = "softmax", name = "convnext_tiny" | images
application_convnext_xlarge | include_top = TRUE, include_preprocessing = TRUE, weights = "imagenet", input_tensor = NULL, input_shape = NULL, pooling = NULL, classes = 1000L, classifier_activation = "softmax", name = "convnext_xlarge" | images
application_decode_predictions | model, preds, top = 5L, ... | images
application_densenet121 | include_top = TRUE, weights = "imagenet", input_tensor = NULL, input_shape = NULL, pooling = NULL, classes = 1000L, classifier_activation = "softmax", name = "densenet121" | images
application_densenet169 | include_top = TRUE, weights = "imagenet", input_tensor = NULL, input_shape = NULL, pooling = NULL, classes = 1000L, classifier_activation = "softmax", name = "densenet169" | images
application_densenet201 | include_top = TRUE, weights = "imagenet", input_tensor = NULL, input_shape = NULL, pooling = NULL, classes = 1000L, classifier_activation = "softmax", name = "densenet201" | images
application_efficientnet_b0 | include_top = TRUE, weights = "imagenet", input_tensor = NULL, input_shape = NULL, pooling = NULL, classes = 1000L, classifier_activation = "softmax", name = "efficientnetb0", ... | images
application_efficientnet_b1 | include_top = TRUE, weights = "imagenet", input_tensor = NULL, input_shape = NULL, pooling = NULL, classes = 1000L, classifier_activation = "softmax", name = "efficientnetb1", ... | images
application_efficientnet_b2 | include_top = TRUE, weights = "imagenet", input_tensor = NULL, input_shape = NULL, pooling = NULL, classes = 1000L, classifier_activation = "softmax", name = "efficientnetb2", ... | images
application_efficientnet_b3 | include_top = TRUE, weights = "imagenet", input_tensor = NULL, input_shape = NULL, pooling = NULL, classes = 1000L, classifier_activation = "softmax", name = "efficientnetb3", ... | images
application_efficientnet_b4 | include_top = TRUE, weights = "imagenet", input_tensor = NULL, input_shape = NULL, pooling = NULL, classes = 1000L, classifier_activation = "softmax", name = "efficientnetb4", ... | images
application_efficientnet_b5 | include_top = TRUE, weights = "imagenet", input_tensor = NULL, input_shape = NULL, pooling = NULL, classes = 1000L, classifier_activation = "softmax", name = "efficientnetb5", ... | images
application_efficientnet_b6 | include_top = TRUE, weights = "imagenet", input_tensor = NULL, input_shape = NULL, pooling = NULL, classes = 1000L, classifier_activation = "softmax", name = "efficientnetb6", ... | images
application_efficientnet_b7 | include_top = TRUE, weights = "imagenet", input_tensor = NULL, input_shape = NULL, pooling = NULL, classes = 1000L, classifier_activation = "softmax", name = "efficientnetb7", ... | images
application_efficientnet_v2b0 | include_top = TRUE, weights = "imagenet", input_tensor = NULL, input_shape = NULL, pooling = NULL, classes = 1000L, classifier_activation = "softmax", include_preprocessing = TRUE, name = "efficientnetv2-b0" | images
application_efficientnet_v2b1 | include_top = TRUE, weights = "imagenet", input_tensor = NULL, input_shape = NULL, pooling = NULL, classes = 1000L, classifier_activation = "softmax", include_preprocessing = TRUE, name = "efficientnetv2-b1" | images
application_efficientnet_v2b2 | include_top = TRUE, weights = "imagenet", input_tensor = NULL, input_shape = NULL, pooling = NULL, classes = 1000L, classifier_activation = "softmax", include_preprocessing = TRUE, name = "efficientnetv2-b2" | images
application_efficientnet_v2b3 | include_top = TRUE, weights = "imagenet", input_tensor = NULL, input_shape = NULL, pooling = NULL, classes = 1000L, classifier_activation = "softmax", include_preprocessing = TRUE, name = "efficientnetv2-b3" | images
application_efficientnet_v2l | include_top = TRUE, weights = "imagenet", input_tensor = NULL, input_shape = NULL, pooling = NULL, classes = 1000L, classifier_activation = "softmax", include_preprocessing = TRUE, name = "efficientnetv2-l" | images
application_efficientnet_v2m | include_top = TRUE, weights = "imagenet", input_tensor = NULL, input_shape = NULL, pooling = NULL, classes = 1000L, classifier_activation = "softmax", include_preprocessing = TRUE, name = "efficientnetv2-m" | images
application_efficientnet_v2s | include_top = TRUE, weights = "imagenet", input_tensor = NULL, input_shape = NULL, pooling = NULL, classes = 1000L, classifier_activation = "softmax", include_preprocessing = TRUE, name = "efficientnetv2-s" | images
application_inception_resnet_v2 | include_top = TRUE, weights = "imagenet", input_tensor = NULL, input_shape = NULL, pooling = NULL, classes = 1000L, classifier_activation = "softmax", name = "inception_resnet_v2" | images
application_inception_v3 | include_top = TRUE, weights = "imagenet", input_tensor = NULL, input_shape = NULL, pooling = NULL, classes = 1000L, classifier_activation = "softmax", name = "inception_v3" | images
application_mobilenet | input_shape = NULL, alpha = 1, depth_multiplier = 1L, dropout = 0.001, include_top = TRUE, weights = "imagenet", input_tensor = NULL, pooling = NULL, classes = 1000L, classifier_activation = "softmax", name = NULL | images
application_mobilenet_v2 | input_shape = NULL, alpha = 1, include_top = TRUE, weights = "imagenet", input_tensor = NULL, pooling = NULL, classes = 1000L, classifier_activation = "softmax", name = NULL | images
application_mobilenet_v3_large | input_shape = NULL, alpha = 1, minimalistic = FALSE, include_top = TRUE, weights = "imagenet", input_tensor = NULL, classes = 1000L, pooling = NULL, dropout_rate = 0.2, classifier_activation = "softmax", include_preprocessing = TRUE, name = "MobileNetV3Large" | images
application_mobilenet_v3_small | input_shape = NULL, alpha = 1, minimalistic = FALSE, include_top = TRUE, weights = "imagenet", input_tensor = NULL, classes = 1000L, pooling = NULL, dropout_rate = 0.2, classifier_activation = "softmax", include_preprocessing = TRUE, name = "MobileNetV3Small" | images
application_nasnet_large | input_shape = NULL, include_top = TRUE, weights = "imagenet", input_tensor = NULL, pooling = NULL, classes = 1000L, classifier_activation = "softmax", name = "nasnet_large" | images
application_nasnet_mobile | input_shape = NULL, include_top = TRUE, weights = "imagenet", input_tensor = NULL, pooling = NULL, classes = 1000L, classifier_activation = "softmax", name = "nasnet_mobile" | images
application_nasnetlarge | ... | images
application_nasnetmobile | ... | images
application_preprocess_inputs | model, x, ..., data_format = NULL | images
application_resnet101 | include_top = TRUE, weights = "imagenet", input_tensor = NULL, input_shape = NULL, pooling = NULL, classes = 1000L, classifier_activation = "softmax", name = "resnet101" | images
application_resnet101_v2 | include_top = TRUE, weights = "imagenet", input_tensor = NULL, input_shape = NULL, pooling = NULL, classes = 1000L, classifier_activation = "softmax", name = "resnet101v2" | images
application_resnet152 | include_top = TRUE, weights = "imagenet", input_tensor = NULL, input_shape = NULL, pooling = NULL, classes = 1000L, classifier_activation = "softmax", name = "resnet152" | images
application_resnet152_v2 | include_top = TRUE, weights = "imagenet", input_tensor = NULL, input_shape = NULL, pooling = NULL, classes = 1000L, classifier_activation = "softmax", name = "resnet152v2" | images
application_resnet50 | include_top = TRUE, weights = "imagenet", input_tensor = NULL, input_shape = NULL, pooling = NULL, classes = 1000L, classifier_activation = "softmax", name = "resnet50" | images
application_resnet50_v2 | include_top = TRUE, weights = "imagenet", input_tensor = NULL, input_shape = NULL, pooling = NULL, classes = 1000L, classifier_activation = "softmax", name = "resnet50v2" | images
application_vgg16 | include_top = TRUE, weights = "imagenet", input_tensor = NULL, input_shape = NULL, pooling = NULL, classes = 1000L, classifier_activation = "softmax", name = "vgg16" | images
application_vgg19 | include_top = TRUE, weights = "imagenet", input_tensor = NULL, input_shape = NULL, pooling = NULL, classes = 1000L, classifier_activation = "softmax", name = "vgg19" | images
application_xception | include_top = TRUE, weights = "imagenet", input_tensor = NULL, input_shape = NULL, pooling = NULL, classes = 1000L, classifier_activation = "softmax", name = "xception" | images
as_tensor | ... | surface
audio_dataset_from_directory | directory, labels = "inferred", label_mode = "int", class_names = NULL, batch_size = 32L, sampling_rate = NULL, output_sequence_length = NULL, ragged = FALSE, shuffle = TRUE, seed = NULL, validation_split = NULL, subset = NULL, follow_links = FALSE, verbose = TRUE | images
bidirectional | object, layer, merge_mode = "concat", weights = NULL, backward_layer = NULL, ... | recurrent
callback_remote_monitor | root = "http://localhost:9000", path = "/publish/epoch/end/", field = "data", headers = NULL, send_as_json = FALSE | later
callback_swap_ema_weights | swap_on_epoch = FALSE | later
config_backend | ... | python
config_disable_flash_attention | ... | python
config_disable_interactive_logging | ... | python
config_disable_traceback_filtering | ... | python
config_enable_flash_attention | ... | python
config_enable_interactive_logging | ... | python
config_enable_traceback_filtering | ... | python
config_enable_unsafe_deserialization | ... | python
config_epsilon | ... | python
config_floatx | ... | python
config_image_data_format | ... | python
config_is_flash_attention_enabled | ... | python
config_is_interactive_logging_enabled | ... | python
config_is_nnx_enabled | ... | python
config_is_traceback_filtering_enabled | ... | python
config_max_epochs | ... | python
config_max_steps_per_epoch | ... | python
config_set_backend | backend | python
config_set_epsilon | value | python
config_set_floatx | value | python
config_set_image_data_format | data_format | python
config_set_max_epochs | max_epochs | python
config_set_max_steps_per_epoch | max_steps_per_epoch | python
dataset_boston_housing | path = "boston_housing.npz", test_split = 0.2, seed = 113L, convert = TRUE | datasets
dataset_california_housing | version = "large", path = "california_housing.npz", test_split = 0.2, seed = 113L, convert = TRUE | datasets
dataset_cifar10 | convert = TRUE | datasets
dataset_cifar100 | label_mode = c("fine", "coarse"), convert = TRUE | datasets
dataset_fashion_mnist | convert = TRUE | datasets
dataset_imdb | path = "imdb.npz", num_words = NULL, skip_top = 0L, maxlen = NULL, seed = 113L, start_char = 1L, oov_char = 2L, index_from = 3L, convert = TRUE | datasets
dataset_imdb_word_index | path = "imdb_word_index.json" | datasets
dataset_reuters | path = "reuters.npz", num_words = NULL, skip_top = 0L, maxlen = NULL, test_split = 0.2, seed = 113L, start_char = 1L, oov_char = 2L, index_from = 3L, convert = TRUE | datasets
dataset_reuters_word_index | path = "reuters_word_index.pkl" | datasets
export_savedmodel | ... | python
feature_cross | feature_names, crossing_dim, output_mode = "one_hot" | later
feature_custom | dtype, preprocessor, output_mode | later
feature_float | name = NULL | later
feature_float_discretized | num_bins, bin_boundaries = NULL, output_mode = "one_hot", name = NULL | later
feature_float_normalized | name = NULL | later
feature_float_rescaled | scale = 1, offset = 0, name = NULL | later
feature_integer_categorical | max_tokens = NULL, num_oov_indices = 1, output_mode = "one_hot", name = NULL | later
feature_integer_hashed | num_bins, output_mode = "one_hot", name = NULL | later
feature_string_categorical | max_tokens = NULL, num_oov_indices = 1, output_mode = "one_hot", name = NULL | later
feature_string_hashed | num_bins, output_mode = "one_hot", name = NULL | later
flag_boolean | ... | later
flag_integer | ... | later
flag_numeric | ... | later
flag_string | ... | later
flags | ... | later
generate | ... | later
get_file | fname = NULL, origin = NULL, ..., file_hash = NULL, cache_subdir = "datasets", hash_algorithm = "auto", extract = FALSE, archive_format = "auto", cache_dir = NULL, force_download = FALSE | datasets
get_source_inputs | tensor | surface
get_state_tree | object, value_format = "backend_tensor" | later
get_vocabulary | object, include_special_tokens = TRUE | text
image_array_save | x, path, data_format = NULL, file_format = NULL, scale = TRUE, ... | images
image_dataset_from_directory | directory, labels = "inferred", label_mode = "int", class_names = NULL, color_mode = "rgb", batch_size = 32L, image_size = c(256L, 256L), shuffle = TRUE, seed = NULL, validation_split = NULL, subset = NULL, interpolation = "bilinear", follow_links = FALSE, crop_to_aspect_ratio = FALSE, pad_to_aspect_ratio = FALSE, data_format = NULL, verbose = TRUE | images
image_from_array | x, data_format = NULL, scale = TRUE, dtype = NULL | images
image_load | path, color_mode = "rgb", target_size = NULL, interpolation = "nearest", keep_aspect_ratio = FALSE | images
image_smart_resize | x, size, interpolation = "bilinear", data_format = "channels_last", backend_module = NULL | images
image_to_array | img, data_format = NULL, dtype = NULL | images
imagenet_decode_predictions | preds, top = 5 | images
imagenet_preprocess_input | x, data_format = NULL, mode = "caffe" | images
import | ... | python
initializer_constant | value = 0 | later
initializer_glorot_normal | seed = NULL | later
initializer_he_uniform | seed = NULL | later
initializer_identity | gain = 1 | later
initializer_lecun_normal | seed = NULL | later
initializer_lecun_uniform | seed = NULL | later
initializer_orthogonal | gain = 1, seed = NULL | later
initializer_random_uniform | minval = -0.05, maxval = 0.05, seed = NULL | later
initializer_stft | side = "real", window = "hann", scaling = "density", periodic = FALSE | later
initializer_truncated_normal | mean = 0, stddev = 0.05, seed = NULL | later
initializer_variance_scaling | scale = 1, mode = "fan_in", distribution = "truncated_normal", seed = NULL | later
install_keras | envname = "r-keras", ..., extra_packages = c("scipy", "pandas", "Pillow", "pydot", "ipython", "tensorflow_datasets"), python_version = ">=3.9,<=3.11", backend = c("tensorflow", "jax"), gpu = NA, restart_session = TRUE | python
keras | <object> | python
keras_variable | initializer, shape = NULL, dtype = NULL, trainable = TRUE, autocast = TRUE, aggregation = "none", synchronization = "auto", name = NULL, ... | later
layer_activation_parametric_relu | object, alpha_initializer = "Zeros", alpha_regularizer = NULL, alpha_constraint = NULL, shared_axes = NULL, ... | later
layer_activity_regularization | object, l1 = 0, l2 = 0, ... | later
layer_additive_attention | object, use_scale = TRUE, dropout = 0, ... | text
layer_alpha_dropout | object, rate, noise_shape = NULL, seed = NULL, ... | later
layer_attention | object, use_scale = FALSE, score_mode = "dot", dropout = 0, seed = NULL, ... | text
layer_aug_mix | object, value_range = c(0L, 255L), num_chains = 3L, chain_depth = 3L, factor = 0.3, alpha = 1, all_ops = TRUE, interpolation = "bilinear", seed = NULL, data_format = NULL, ... | images
layer_auto_contrast | object, value_range = tuple(0L, 255L), ... | images
layer_average_pooling_3d | object, pool_size, strides = NULL, padding = "valid", data_format = NULL, name = NULL, ... | later
layer_bidirectional | object, layer, merge_mode = "concat", weights = NULL, backward_layer = NULL, ... | recurrent
layer_category_encoding | object, num_tokens = NULL, output_mode = "multi_hot", sparse = FALSE, ... | text
layer_center_crop | object, height, width, data_format = NULL, ... | images
layer_conv_1d_transpose | object, filters, kernel_size, strides = 1L, padding = "valid", output_padding = NULL, data_format = NULL, dilation_rate = 1L, activation = NULL, use_bias = TRUE, kernel_initializer = "glorot_uniform", bias_initializer = "zeros", kernel_regularizer = NULL, bias_regularizer = NULL, activity_regularizer = NULL, kernel_constraint = NULL, bias_constraint = NULL, ... | images
layer_conv_2d_transpose | object, filters, kernel_size, strides = list(1L, 1L), padding = "valid", output_padding = NULL, data_format = NULL, dilation_rate = list(1L, 1L), activation = NULL, use_bias = TRUE, kernel_initializer = "glorot_uniform", bias_initializer = "zeros", kernel_regularizer = NULL, bias_regularizer = NULL, activity_regularizer = NULL, kernel_constraint = NULL, bias_constraint = NULL, ... | images
layer_conv_3d | object, filters, kernel_size, strides = list(1L, 1L, 1L), padding = "valid", data_format = NULL, dilation_rate = list(1L, 1L, 1L), groups = 1L, activation = NULL, use_bias = TRUE, kernel_initializer = "glorot_uniform", bias_initializer = "zeros", kernel_regularizer = NULL, bias_regularizer = NULL, activity_regularizer = NULL, kernel_constraint = NULL, bias_constraint = NULL, ... | later
layer_conv_3d_transpose | object, filters, kernel_size, strides = list(1L, 1L, 1L), padding = "valid", output_padding = NULL, data_format = NULL, dilation_rate = list(1L, 1L, 1L), activation = NULL, use_bias = TRUE, kernel_initializer = "glorot_uniform", bias_initializer = "zeros", kernel_regularizer = NULL, bias_regularizer = NULL, activity_regularizer = NULL, kernel_constraint = NULL, bias_constraint = NULL, ... | images
layer_conv_lstm_1d | object, filters, kernel_size, strides = 1L, padding = "valid", data_format = NULL, dilation_rate = 1L, activation = "tanh", recurrent_activation = "sigmoid", use_bias = TRUE, kernel_initializer = "glorot_uniform", recurrent_initializer = "orthogonal", bias_initializer = "zeros", unit_forget_bias = TRUE, kernel_regularizer = NULL, recurrent_regularizer = NULL, bias_regularizer = NULL, activity_regularizer = NULL, kernel_constraint = NULL, recurrent_constraint = NULL, bias_constraint = NULL, dropout = 0, recurrent_dropout = 0, seed = NULL, return_sequences = FALSE, return_state = FALSE, go_backwards = FALSE, stateful = FALSE, ..., unroll = NULL | recurrent
layer_conv_lstm_2d | object, filters, kernel_size, strides = 1L, padding = "valid", data_format = NULL, dilation_rate = 1L, activation = "tanh", recurrent_activation = "sigmoid", use_bias = TRUE, kernel_initializer = "glorot_uniform", recurrent_initializer = "orthogonal", bias_initializer = "zeros", unit_forget_bias = TRUE, kernel_regularizer = NULL, recurrent_regularizer = NULL, bias_regularizer = NULL, activity_regularizer = NULL, kernel_constraint = NULL, recurrent_constraint = NULL, bias_constraint = NULL, dropout = 0, recurrent_dropout = 0, seed = NULL, return_sequences = FALSE, return_state = FALSE, go_backwards = FALSE, stateful = FALSE, ..., unroll = NULL | recurrent
layer_conv_lstm_3d | object, filters, kernel_size, strides = 1L, padding = "valid", data_format = NULL, dilation_rate = 1L, activation = "tanh", recurrent_activation = "sigmoid", use_bias = TRUE, kernel_initializer = "glorot_uniform", recurrent_initializer = "orthogonal", bias_initializer = "zeros", unit_forget_bias = TRUE, kernel_regularizer = NULL, recurrent_regularizer = NULL, bias_regularizer = NULL, activity_regularizer = NULL, kernel_constraint = NULL, recurrent_constraint = NULL, bias_constraint = NULL, dropout = 0, recurrent_dropout = 0, seed = NULL, return_sequences = FALSE, return_state = FALSE, go_backwards = FALSE, stateful = FALSE, ..., unroll = NULL | recurrent
layer_cropping_3d | object, cropping = list(list(1L, 1L), list(1L, 1L), list(1L, 1L)), data_format = NULL, ... | images
layer_cut_mix | object, factor = 1, seed = NULL, data_format = NULL, ... | images
layer_depthwise_conv_1d | object, kernel_size, strides = 1L, padding = "valid", depth_multiplier = 1L, data_format = NULL, dilation_rate = 1L, activation = NULL, use_bias = TRUE, depthwise_initializer = "glorot_uniform", bias_initializer = "zeros", depthwise_regularizer = NULL, bias_regularizer = NULL, activity_regularizer = NULL, depthwise_constraint = NULL, bias_constraint = NULL, ... | images
layer_depthwise_conv_2d | object, kernel_size, strides = list(1L, 1L), padding = "valid", depth_multiplier = 1L, data_format = NULL, dilation_rate = list(1L, 1L), activation = NULL, use_bias = TRUE, depthwise_initializer = "glorot_uniform", bias_initializer = "zeros", depthwise_regularizer = NULL, bias_regularizer = NULL, activity_regularizer = NULL, depthwise_constraint = NULL, bias_constraint = NULL, ... | images
layer_discretization | object, bin_boundaries = NULL, num_bins = NULL, epsilon = 0.01, output_mode = "int", sparse = FALSE, dtype = NULL, name = NULL | text
layer_einsum_dense | object, equation, output_shape, activation = NULL, bias_axes = NULL, kernel_initializer = "glorot_uniform", bias_initializer = "zeros", kernel_regularizer = NULL, bias_regularizer = NULL, kernel_constraint = NULL, bias_constraint = NULL, lora_rank = NULL, lora_alpha = NULL, ... | later
layer_equalization | object, value_range = list(0L, 255L), bins = 256L, data_format = NULL, ... | images
layer_feature_space | object, features, output_mode = "concat", crosses = NULL, crossing_dim = 32L, hashing_dim = 32L, num_discretization_bins = 32L, name = NULL, feature_names = NULL | later
layer_flax_module_wrapper | object, module, method = NULL, variables = NULL, ... | python
layer_gaussian_dropout | object, rate, seed = NULL, ... | later
layer_gaussian_noise | object, stddev, seed = NULL, ... | later
layer_global_average_pooling_3d | object, data_format = NULL, keepdims = FALSE, ... | later
layer_global_max_pooling_3d | object, data_format = NULL, keepdims = FALSE, ... | later
layer_group_normalization | object, groups = 32L, axis = -1L, epsilon = 0.001, center = TRUE, scale = TRUE, beta_initializer = "zeros", gamma_initializer = "ones", beta_regularizer = NULL, gamma_regularizer = NULL, beta_constraint = NULL, gamma_constraint = NULL, ... | later
layer_group_query_attention | object, head_dim, num_query_heads, num_key_value_heads, dropout = 0, use_bias = TRUE, flash_attention = NULL, kernel_initializer = "glorot_uniform", bias_initializer = "zeros", kernel_regularizer = NULL, bias_regularizer = NULL, activity_regularizer = NULL, kernel_constraint = NULL, bias_constraint = NULL, seed = NULL, ... | text
layer_gru | object, units, activation = "tanh", recurrent_activation = "sigmoid", use_bias = TRUE, kernel_initializer = "glorot_uniform", recurrent_initializer = "orthogonal", bias_initializer = "zeros", kernel_regularizer = NULL, recurrent_regularizer = NULL, bias_regularizer = NULL, activity_regularizer = NULL, kernel_constraint = NULL, recurrent_constraint = NULL, bias_constraint = NULL, dropout = 0, recurrent_dropout = 0, seed = NULL, return_sequences = FALSE, return_state = FALSE, go_backwards = FALSE, stateful = FALSE, unroll = FALSE, reset_after = TRUE, use_cudnn = "auto", ... | recurrent
layer_hashed_crossing | object, num_bins, output_mode = "int", sparse = FALSE, name = NULL, dtype = NULL, ... | text
layer_hashing | object, num_bins, mask_value = NULL, salt = NULL, output_mode = "int", sparse = FALSE, ... | text
layer_identity | object, ... | later
layer_integer_lookup | object, max_tokens = NULL, num_oov_indices = 1L, mask_token = NULL, oov_token = -1L, vocabulary = NULL, vocabulary_dtype = "int64", idf_weights = NULL, invert = FALSE, output_mode = "int", sparse = FALSE, pad_to_max_tokens = FALSE, name = NULL, ... | text
layer_jax_model_wrapper | object, call_fn, init_fn = NULL, params = NULL, state = NULL, seed = NULL, ..., dtype = NULL | python
layer_lstm | object, units, activation = "tanh", recurrent_activation = "sigmoid", use_bias = TRUE, kernel_initializer = "glorot_uniform", recurrent_initializer = "orthogonal", bias_initializer = "zeros", unit_forget_bias = TRUE, kernel_regularizer = NULL, recurrent_regularizer = NULL, bias_regularizer = NULL, activity_regularizer = NULL, kernel_constraint = NULL, recurrent_constraint = NULL, bias_constraint = NULL, dropout = 0, recurrent_dropout = 0, seed = NULL, return_sequences = FALSE, return_state = FALSE, go_backwards = FALSE, stateful = FALSE, unroll = FALSE, use_cudnn = "auto", ... | recurrent
layer_masking | object, mask_value = 0, ... | recurrent
layer_max_num_bounding_boxes | object, max_number, fill_value = -1L, ... | images
layer_max_pooling_3d | object, pool_size = list(2L, 2L, 2L), strides = NULL, padding = "valid", data_format = NULL, name = NULL, ... | later
layer_mel_spectrogram | object, fft_length = 2048L, sequence_stride = 512L, sequence_length = NULL, window = "hann", sampling_rate = 16000L, num_mel_bins = 128L, min_freq = 20, max_freq = NULL, power_to_db = TRUE, top_db = 80, mag_exp = 2, min_power = 1e-10, ref_power = 1, ... | later
layer_mix_up | object, alpha = 0.2, data_format = NULL, seed = NULL, ... | images
layer_multi_head_attention | inputs, num_heads, key_dim, value_dim = NULL, dropout = 0, use_bias = TRUE, output_shape = NULL, attention_axes = NULL, flash_attention = NULL, kernel_initializer = "glorot_uniform", bias_initializer = "zeros", kernel_regularizer = NULL, bias_regularizer = NULL, activity_regularizer = NULL, kernel_constraint = NULL, bias_constraint = NULL, seed = NULL, ... | text
layer_pipeline | layers, name = NULL | images
layer_rand_augment | object, value_range = list(0L, 255L), num_ops = 2L, factor = 0.5, interpolation = "bilinear", seed = NULL, data_format = NULL, ... | images
layer_random_brightness | object, factor, value_range = list(0L, 255L), seed = NULL, ... | images
layer_random_color_degeneration | object, factor, value_range = list(0L, 255L), data_format = NULL, seed = NULL, ... | images
layer_random_color_jitter | object, value_range = list(0L, 255L), brightness_factor = NULL, contrast_factor = NULL, saturation_factor = NULL, hue_factor = NULL, seed = NULL, data_format = NULL, ... | images
layer_random_contrast | object, factor, value_range = c(0L, 255L), seed = NULL, ... | images
layer_random_crop | object, height, width, seed = NULL, data_format = NULL, name = NULL, ... | images
layer_random_elastic_transform | object, factor = 1, scale = 1, interpolation = "bilinear", fill_mode = "reflect", fill_value = 0, value_range = list(0L, 255L), seed = NULL, data_format = NULL, ... | images
layer_random_erasing | object, factor = 1, scale = list(0.02, 0.33), fill_value = NULL, value_range = list(0L, 255L), seed = NULL, data_format = NULL, ... | images
layer_random_flip | object, mode = "horizontal_and_vertical", seed = NULL, data_format = NULL, ... | images
layer_random_gaussian_blur | object, factor = 1, kernel_size = 3L, sigma = 1, value_range = list(0L, 255L), data_format = NULL, seed = NULL, ... | images
layer_random_grayscale | object, factor = 0.5, data_format = NULL, seed = NULL, ... | images
layer_random_hue | object, factor, value_range = list(0L, 255L), data_format = NULL, seed = NULL, ... | images
layer_random_invert | object, factor = 1, value_range = list(0L, 255L), seed = NULL, data_format = NULL, ... | images
layer_random_perspective | object, factor = 1, scale = 1, interpolation = "bilinear", fill_value = 0, seed = NULL, data_format = NULL, ... | images
layer_random_posterization | object, factor, value_range = list(0L, 255L), data_format = NULL, seed = NULL, ... | images
layer_random_rotation | object, factor, fill_mode = "reflect", interpolation = "bilinear", seed = NULL, fill_value = 0, data_format = NULL, ... | images
layer_random_saturation | object, factor, value_range = list(0L, 255L), data_format = NULL, seed = NULL, ... | images
layer_random_sharpness | object, factor, value_range = list(0L, 255L), data_format = NULL, seed = NULL, ... | images
layer_random_shear | object, x_factor = 0, y_factor = 0, interpolation = "bilinear", fill_mode = "reflect", fill_value = 0, data_format = NULL, seed = NULL, ... | images
layer_random_translation | object, height_factor, width_factor, fill_mode = "reflect", interpolation = "bilinear", seed = NULL, fill_value = 0, data_format = NULL, ... | images
layer_random_zoom | object, height_factor, width_factor = NULL, fill_mode = "reflect", interpolation = "bilinear", seed = NULL, fill_value = 0, data_format = NULL, ... | images
layer_resizing | object, height, width, interpolation = "bilinear", crop_to_aspect_ratio = FALSE, pad_to_aspect_ratio = FALSE, fill_mode = "constant", fill_value = 0, data_format = NULL, ..., antialias = FALSE | images
layer_rms_normalization | object, axis = -1L, epsilon = 1e-06, ... | later
layer_rnn | object, cell, return_sequences = FALSE, return_state = FALSE, go_backwards = FALSE, stateful = FALSE, unroll = FALSE, zero_output_for_mask = FALSE, ... | recurrent
layer_separable_conv_1d | object, filters, kernel_size, strides = 1L, padding = "valid", data_format = NULL, dilation_rate = 1L, depth_multiplier = 1L, activation = NULL, use_bias = TRUE, depthwise_initializer = "glorot_uniform", pointwise_initializer = "glorot_uniform", bias_initializer = "zeros", depthwise_regularizer = NULL, pointwise_regularizer = NULL, bias_regularizer = NULL, activity_regularizer = NULL, depthwise_constraint = NULL, pointwise_constraint = NULL, bias_constraint = NULL, ... | images
layer_separable_conv_2d | object, filters, kernel_size, strides = list(1L, 1L), padding = "valid", data_format = NULL, dilation_rate = list(1L, 1L), depth_multiplier = 1L, activation = NULL, use_bias = TRUE, depthwise_initializer = "glorot_uniform", pointwise_initializer = "glorot_uniform", bias_initializer = "zeros", depthwise_regularizer = NULL, pointwise_regularizer = NULL, bias_regularizer = NULL, activity_regularizer = NULL, depthwise_constraint = NULL, pointwise_constraint = NULL, bias_constraint = NULL, ... | images
layer_simple_rnn | object, units, activation = "tanh", use_bias = TRUE, kernel_initializer = "glorot_uniform", recurrent_initializer = "orthogonal", bias_initializer = "zeros", kernel_regularizer = NULL, recurrent_regularizer = NULL, bias_regularizer = NULL, activity_regularizer = NULL, kernel_constraint = NULL, recurrent_constraint = NULL, bias_constraint = NULL, dropout = 0, recurrent_dropout = 0, return_sequences = FALSE, return_state = FALSE, go_backwards = FALSE, stateful = FALSE, unroll = FALSE, seed = NULL, ... | recurrent
layer_solarization | object, addition_factor = 0, threshold_factor = 0, value_range = tuple(0L, 255L), seed = NULL, ... | images
layer_spatial_dropout_1d | object, rate, seed = NULL, name = NULL, dtype = NULL | later
layer_spatial_dropout_2d | object, rate, data_format = NULL, seed = NULL, name = NULL, dtype = NULL | later
layer_spatial_dropout_3d | object, rate, data_format = NULL, seed = NULL, name = NULL, dtype = NULL | later
layer_spectral_normalization | object, layer, power_iterations = 1L, ... | later
layer_stft_spectrogram | object, mode = "log", frame_length = 256L, frame_step = NULL, fft_length = NULL, window = "hann", periodic = FALSE, scaling = "density", padding = "valid", expand_dims = FALSE, data_format = NULL, ... | later
layer_string_lookup | object, max_tokens = NULL, num_oov_indices = 1L, mask_token = NULL, oov_token = "[UNK]", vocabulary = NULL, idf_weights = NULL, invert = FALSE, output_mode = "int", pad_to_max_tokens = FALSE, sparse = FALSE, encoding = "utf-8", name = NULL, ..., vocabulary_dtype = NULL | text
layer_text_vectorization | object, max_tokens = NULL, standardize = "lower_and_strip_punctuation", split = "whitespace", ngrams = NULL, output_mode = "int", output_sequence_length = NULL, pad_to_max_tokens = FALSE, vocabulary = NULL, idf_weights = NULL, sparse = FALSE, ragged = FALSE, encoding = "utf-8", name = NULL, ... | text
layer_tfsm | object, filepath, call_endpoint = "serve", call_training_endpoint = NULL, trainable = TRUE, name = NULL, dtype = NULL | python
layer_time_distributed | object, layer, ... | recurrent
layer_torch_module_wrapper | object, module, output_shape = NULL, name = NULL, ... | python
layer_unit_normalization | object, axis = -1L, ... | later
layer_upsampling_3d | object, size = list(2L, 2L, 2L), data_format = NULL, ... | images
layer_zero_padding_3d | object, padding = list(list(1L, 1L), list(1L, 1L), list(1L, 1L)), data_format = NULL, ... | images
loss_categorical_generalized_cross_entropy | y_true, y_pred, q = 0.5, ..., reduction = "sum_over_batch_size", name = "categorical_generalized_cross_entropy", dtype = NULL | later
loss_circle | y_true, y_pred, ref_labels = NULL, ref_embeddings = NULL, remove_diagonal = TRUE, gamma = 80L, margin = 0.4, ..., reduction = "sum_over_batch_size", name = "circle", dtype = NULL | later
loss_ctc | y_true, y_pred, ..., reduction = "sum_over_batch_size", name = "ctc", dtype = NULL | later
loss_dice | y_true, y_pred, ..., reduction = "sum_over_batch_size", name = "dice", axis = NULL, dtype = NULL | later
loss_tversky | y_true, y_pred, ..., alpha = 0.5, beta = 0.5, reduction = "sum_over_batch_size", name = "tversky", axis = NULL, dtype = NULL | later
metric_binary_focal_crossentropy | y_true, y_pred, apply_class_balancing = FALSE, alpha = 0.25, gamma = 2, from_logits = FALSE, label_smoothing = 0, axis = -1L | later
metric_binary_iou | ..., target_class_ids = list(0L, 1L), threshold = 0.5, name = NULL, dtype = NULL | later
metric_categorical_focal_crossentropy | y_true, y_pred, alpha = 0.25, gamma = 2, from_logits = FALSE, label_smoothing = 0, axis = -1L | later
metric_categorical_hinge | y_true, y_pred, ..., name = "categorical_hinge", dtype = NULL | later
metric_concordance_correlation | y_true, y_pred, axis = -1L, ..., name = "concordance_correlation", dtype = NULL | later
metric_cosine_similarity | ..., name = "cosine_similarity", dtype = NULL, axis = -1L | later
metric_hinge | y_true, y_pred, ..., name = "hinge", dtype = NULL | later
metric_huber | y_true, y_pred, delta = 1 | later
metric_iou | ..., num_classes, target_class_ids, name = NULL, dtype = NULL, ignore_class = NULL, sparse_y_true = TRUE, sparse_y_pred = TRUE, axis = -1L | later
metric_kl_divergence | y_true, y_pred, ..., name = "kl_divergence", dtype = NULL | later
metric_log_cosh | y_true, y_pred | later
metric_log_cosh_error | ..., name = "logcosh", dtype = NULL | later
metric_mean_squared_logarithmic_error | y_true, y_pred, ..., name = "mean_squared_logarithmic_error", dtype = NULL | later
metric_mean_wrapper | ..., fn, name = NULL, dtype = NULL | later
metric_one_hot_iou | ..., num_classes, target_class_ids, name = NULL, dtype = NULL, ignore_class = NULL, sparse_y_pred = FALSE, axis = -1L | later
metric_one_hot_mean_iou | ..., num_classes, name = NULL, dtype = NULL, ignore_class = NULL, sparse_y_pred = FALSE, axis = -1L | later
metric_pearson_correlation | y_true, y_pred, axis = -1L, ..., name = "pearson_correlation", dtype = NULL | later
metric_poisson | y_true, y_pred, ..., name = "poisson", dtype = NULL | later
metric_precision_at_recall | ..., recall, num_thresholds = 200L, class_id = NULL, name = NULL, dtype = NULL | later
metric_r2_score | ..., class_aggregation = "uniform_average", num_regressors = 0L, name = "r2_score", dtype = NULL | later
metric_recall_at_precision | ..., precision, num_thresholds = 200L, class_id = NULL, name = NULL, dtype = NULL | later
metric_sensitivity_at_specificity | ..., specificity, num_thresholds = 200L, class_id = NULL, name = NULL, dtype = NULL | later
metric_specificity_at_sensitivity | ..., sensitivity, num_thresholds = 200L, class_id = NULL, name = NULL, dtype = NULL | later
metric_squared_hinge | y_true, y_pred, ..., name = "squared_hinge", dtype = NULL | later
named_list | ... | surface
new_learning_rate_schedule_class | classname, call = NULL, initialize = NULL, get_config = NULL, ..., public = list(), private = list(), inherit = NULL, parent_env = parent.frame() | surface
newaxis | <object> | surface
normalize | x, axis = -1L, order = 2L | later
op_angle | x | surface
op_append | x1, x2, axis = NULL | surface
op_arccos | x | surface
op_arccosh | x | surface
op_arcsin | x | surface
op_arcsinh | x | surface
op_arctan | x | surface
op_arctan2 | x1, x2 | surface
op_arctanh | x | surface
op_argpartition | x, kth, axis = -1L, zero_indexed = FALSE | surface
op_argsort | x, axis = -1L, zero_indexed = FALSE | surface
op_array | x, dtype = NULL | surface
op_associative_scan | f, elems, reverse = FALSE, axis = 1L | surface
op_average_pool | inputs, pool_size, strides = NULL, padding = "valid", data_format = NULL | surface
op_bartlett | x | surface
op_bincount | x, weights = NULL, minlength = 0L, sparse = FALSE | surface
op_bitwise_and | x, y | surface
op_bitwise_invert | x | surface
op_bitwise_left_shift | x, y | surface
op_bitwise_not | x | surface
op_bitwise_or | x, y | surface
op_bitwise_right_shift | x, y | surface
op_bitwise_xor | x, y | surface
op_blackman | x | surface
op_cbrt | x | surface
op_ceil | x | surface
op_cholesky | x | surface
op_cond | pred, true_fn, false_fn | surface
op_conj | x | surface
op_conv | inputs, kernel, strides = 1L, padding = "valid", data_format = NULL, dilation_rate = 1L | surface
op_conv_transpose | inputs, kernel, strides = 1L, padding = "valid", output_padding = NULL, data_format = NULL, dilation_rate = 1L | surface
op_corrcoef | x | surface
op_correlate | x1, x2, mode = "valid" | surface
op_cos | x | surface
op_cosh | x | surface
op_cross | x1, x2, axisa = -1L, axisb = -1L, axisc = -1L, axis = NULL | surface
op_ctc_decode | inputs, sequence_lengths, strategy = "greedy", beam_width = 100L, top_paths = 1L, merge_repeated = TRUE, mask_index = 1L | surface
op_ctc_loss | target, output, target_length, output_length, mask_index = 1L | surface
op_cumprod | x, axis = NULL, dtype = NULL | surface
op_cumsum | x, axis = NULL, dtype = NULL | surface
op_custom_gradient | f | surface
op_depthwise_conv | inputs, kernel, strides = 1L, padding = "valid", data_format = NULL, dilation_rate = 1L | surface
op_det | x | surface
op_diag | x, k = 0L | surface
op_diagflat | x, k = 0L | surface
op_diff | a, n = 1L, axis = -1L | surface
op_digitize | x, bins, zero_indexed = FALSE | surface
op_dot_product_attention | query, key, value, bias = NULL, mask = NULL, scale = NULL, is_causal = FALSE, flash_attention = NULL, attn_logits_soft_cap = NULL | surface
op_eig | x | surface
op_eigh | x | surface
op_einsum | subscripts, ... | surface
op_erf | x | surface
op_erfinv | x | surface
op_extract_sequences | x, sequence_length, sequence_stride | surface
op_fft | x | surface
op_fft2 | x | surface
op_floor | x | surface
op_floor_divide | x1, x2 | surface
op_fori_loop | lower, upper, body_fun, init_val | surface
op_get_item | x, key | surface
op_hamming | x | surface
op_hanning | x | surface
op_histogram | x, bins = 10L, range = NULL | surface
op_ifft2 | x | surface
op_imag | x | surface
op_image_affine_transform | images, transform, interpolation = "bilinear", fill_mode = "constant", fill_value = 0L, data_format = NULL | images
op_image_crop | images, top_cropping = NULL, left_cropping = NULL, bottom_cropping = NULL, right_cropping = NULL, target_height = NULL, target_width = NULL, data_format = NULL | images
op_image_elastic_transform | images, alpha = 20, sigma = 5, interpolation = "bilinear", fill_mode = "reflect", fill_value = 0, seed = NULL, data_format = NULL | images
op_image_extract_patches | images, size, strides = NULL, dilation_rate = 1L, padding = "valid", data_format = "channels_last" | images
op_image_gaussian_blur | images, kernel_size = list(3L, 3L), sigma = list(1, 1), data_format = NULL | images
op_image_hsv_to_rgb | images, data_format = NULL | images
op_image_map_coordinates | inputs, coordinates, order, fill_mode = "constant", fill_value = 0L | images
op_image_pad | images, top_padding = NULL, left_padding = NULL, bottom_padding = NULL, right_padding = NULL, target_height = NULL, target_width = NULL, data_format = NULL | images
op_image_perspective_transform | images, start_points, end_points, interpolation = "bilinear", fill_value = 0L, data_format = NULL | images
op_image_resize | images, size, interpolation = "bilinear", antialias = FALSE, crop_to_aspect_ratio = FALSE, pad_to_aspect_ratio = FALSE, fill_mode = "constant", fill_value = 0, data_format = NULL | images
op_image_rgb_to_grayscale | images, data_format = NULL | images
op_image_rgb_to_hsv | images, data_format = NULL | images
op_in_top_k | targets, predictions, k | surface
op_inv | x | surface
op_irfft | x, fft_length = NULL | surface
op_isclose | x1, x2, rtol = 1e-05, atol = 1e-08, equal_nan = FALSE | surface
op_istft | x, sequence_length, sequence_stride, fft_length, length = NULL, window = "hann", center = TRUE | surface
op_kaiser | x, beta | surface
op_layer_normalization | x, gamma = NULL, beta = NULL, axis = -1L, epsilon = NULL, ... | surface
op_left_shift | x, y | surface
op_logdet | x | surface
op_lstsq | a, b, rcond = NULL | surface
op_lu_factor | x | surface
op_map | xs, f | surface
op_max_pool | inputs, pool_size, strides = NULL, padding = "valid", data_format = NULL | surface
op_median | x, axis = NULL, keepdims = FALSE | surface
op_meshgrid | ..., indexing = "xy" | surface
op_mod | x1, x2 | surface
op_multi_hot | inputs, num_classes, axis = -1L, dtype = NULL, sparse = FALSE, ... | surface
op_nonzero | x | surface
op_norm | x, ord = NULL, axis = NULL, keepdims = FALSE | surface
op_pad | x, pad_width, mode = "constant", constant_values = NULL | surface
op_pmax | x1, x2 | surface
op_pmin | x1, x2 | surface
op_polar | abs_, angle | surface
op_prod | x, axis = NULL, keepdims = FALSE, dtype = NULL | surface
op_psnr | x1, x2, max_val | surface
op_qr | x, mode = "reduced" | surface
op_quantile | x, q, axis = NULL, method = "linear", keepdims = FALSE | surface
op_real | x | surface
op_rearrange | tensor, pattern, ... | surface
op_rfft | x, fft_length = NULL | surface
op_right_shift | x, y | surface
op_rot90 | array, k = 1L, axes = list(1L, 2L) | surface
op_round | x, decimals = 0L | surface
op_saturate_cast | x, dtype | surface
op_scan | f, init, xs = NULL, length = NULL, reverse = FALSE, unroll = 1L | surface
op_scatter | indices, values, shape | surface
op_scatter_update | inputs, indices, updates | surface
op_searchsorted | sorted_sequence, values, side = "left", zero_indexed = FALSE | surface
op_segment_max | data, segment_ids, num_segments = NULL, sorted = FALSE | surface
op_segment_sum | data, segment_ids, num_segments = NULL, sorted = FALSE | surface
op_select | condlist, choicelist, default = 0L | surface
op_separable_conv | inputs, depthwise_kernel, pointwise_kernel, strides = 1L, padding = "valid", data_format = NULL, dilation_rate = 1L | surface
op_signbit | x | surface
op_sin | x | surface
op_sinh | x | surface
op_slice | inputs, start_indices, shape | surface
op_slice_update | inputs, start_indices, updates | surface
op_slogdet | x | surface
op_solve | a, b | surface
op_solve_triangular | a, b, lower = FALSE | surface
op_sort | x, axis = -1L | surface
op_sparse_sigmoid | x | surface
op_sparsemax | x, axis = -1L | surface
op_stft | x, sequence_length, sequence_stride, fft_length, window = "hann", center = TRUE | surface
op_subset | x, ... | surface
op_subset_set | x, ..., value | surface
op_svd | x, full_matrices = TRUE, compute_uv = TRUE | surface
op_switch | index, branches, ... | surface
op_tan | x | surface
op_top_k | x, k, sorted = TRUE, zero_indexed = FALSE | surface
op_trunc | x | surface
op_unravel_index | indices, shape | surface
op_vectorize | func, ..., excluded = NULL, signature = NULL | surface
op_vectorized_map | elements, f | surface
op_view_as_complex | x | surface
op_view_as_real | x | surface
op_while_loop | cond, body, loop_vars, maximum_iterations = NULL | surface
optimizer_adafactor | learning_rate = 0.001, beta_2_decay = -0.8, epsilon_1 = 1e-30, epsilon_2 = 0.001, clip_threshold = 1, relative_step = TRUE, weight_decay = NULL, clipnorm = NULL, clipvalue = NULL, global_clipnorm = NULL, use_ema = FALSE, ema_momentum = 0.99, ema_overwrite_frequency = NULL, name = "adafactor", ..., loss_scale_factor = NULL, gradient_accumulation_steps = NULL | later
optimizer_muon | learning_rate = 0.001, adam_beta_1 = 0.9, adam_beta_2 = 0.999, epsilon = 1e-07, weight_decay = 0.1, clipnorm = NULL, clipvalue = NULL, global_clipnorm = NULL, use_ema = FALSE, ema_momentum = 0.99, ema_overwrite_frequency = NULL, loss_scale_factor = NULL, gradient_accumulation_steps = NULL, name = "muon", exclude_layers = NULL, exclude_embeddings = TRUE, muon_a = 3.4445, muon_b = -4.775, muon_c = 2.0315, adam_lr_ratio = 0.1, momentum = 0.95, ns_steps = 6L, nesterov = TRUE, ... | later
py_help | ... | python
py_require | ... | python
py_to_r | ... | python
quantize_weights | object, mode, ... | later
r_to_py | ... | python
rnn_cell_gru | units, activation = "tanh", recurrent_activation = "sigmoid", use_bias = TRUE, kernel_initializer = "glorot_uniform", recurrent_initializer = "orthogonal", bias_initializer = "zeros", kernel_regularizer = NULL, recurrent_regularizer = NULL, bias_regularizer = NULL, kernel_constraint = NULL, recurrent_constraint = NULL, bias_constraint = NULL, dropout = 0, recurrent_dropout = 0, reset_after = TRUE, seed = NULL, ... | recurrent
rnn_cell_lstm | units, activation = "tanh", recurrent_activation = "sigmoid", use_bias = TRUE, kernel_initializer = "glorot_uniform", recurrent_initializer = "orthogonal", bias_initializer = "zeros", unit_forget_bias = TRUE, kernel_regularizer = NULL, recurrent_regularizer = NULL, bias_regularizer = NULL, kernel_constraint = NULL, recurrent_constraint = NULL, bias_constraint = NULL, dropout = 0, recurrent_dropout = 0, seed = NULL, ... | recurrent
rnn_cell_simple | units, activation = "tanh", use_bias = TRUE, kernel_initializer = "glorot_uniform", recurrent_initializer = "orthogonal", bias_initializer = "zeros", kernel_regularizer = NULL, recurrent_regularizer = NULL, bias_regularizer = NULL, kernel_constraint = NULL, recurrent_constraint = NULL, bias_constraint = NULL, dropout = 0, recurrent_dropout = 0, seed = NULL, ... | recurrent
rnn_cells_stack | cells, ... | recurrent
run_dir | ... | monitoring
set_state_tree | object, state_tree | later
set_vocabulary | object, vocabulary, idf_weights = NULL, ... | text
split_dataset | dataset, left_size = NULL, right_size = NULL, shuffle = FALSE, seed = NULL | later
tensorboard | ... | monitoring
text_dataset_from_directory | directory, labels = "inferred", label_mode = "int", class_names = NULL, batch_size = 32L, max_length = NULL, shuffle = TRUE, seed = NULL, validation_split = NULL, subset = NULL, follow_links = FALSE, verbose = TRUE | text
time_distributed | object, layer, ... | recurrent
timeseries_dataset_from_array | data, targets, sequence_length, sequence_stride = 1L, sampling_rate = 1L, batch_size = 128L, shuffle = FALSE, seed = NULL, start_index = NULL, end_index = NULL | images
tuple | ... | python
use_backend | backend, gpu = NA | python
use_python | ... | python
use_virtualenv | ... | python
)---"
