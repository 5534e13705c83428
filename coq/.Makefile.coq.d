Witprobe/Sum.vo Witprobe/Sum.glob Witprobe/Sum.v.beautified Witprobe/Sum.required_vo: Witprobe/Sum.v 
Witprobe/Sum.vio: Witprobe/Sum.v 
Witprobe/Sum.vos Witprobe/Sum.vok Witprobe/Sum.required_vos: Witprobe/Sum.v 
Witprobe/Softmax.vo Witprobe/Softmax.glob Witprobe/Softmax.v.beautified Witprobe/Softmax.required_vo: Witprobe/Softmax.v Witprobe/Sum.vo
Witprobe/Softmax.vio: Witprobe/Softmax.v Witprobe/Sum.vio
Witprobe/Softmax.vos Witprobe/Softmax.vok Witprobe/Softmax.required_vos: Witprobe/Softmax.v Witprobe/Sum.vos
Witprobe/SoftmaxTV.vo Witprobe/SoftmaxTV.glob Witprobe/SoftmaxTV.v.beautified Witprobe/SoftmaxTV.required_vo: Witprobe/SoftmaxTV.v Witprobe/Sum.vo Witprobe/Softmax.vo
Witprobe/SoftmaxTV.vio: Witprobe/SoftmaxTV.v Witprobe/Sum.vio Witprobe/Softmax.vio
Witprobe/SoftmaxTV.vos Witprobe/SoftmaxTV.vok Witprobe/SoftmaxTV.required_vos: Witprobe/SoftmaxTV.v Witprobe/Sum.vos Witprobe/Softmax.vos
