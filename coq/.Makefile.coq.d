Witprobe/Sum.vo Witprobe/Sum.glob Witprobe/Sum.v.beautified Witprobe/Sum.required_vo: Witprobe/Sum.v 
Witprobe/Sum.vio: Witprobe/Sum.v 
Witprobe/Sum.vos Witprobe/Sum.vok Witprobe/Sum.required_vos: Witprobe/Sum.v 
Witprobe/Softmax.vo Witprobe/Softmax.glob Witprobe/Softmax.v.beautified Witprobe/Softmax.required_vo: Witprobe/Softmax.v Witprobe/Sum.vo
Witprobe/Softmax.vio: Witprobe/Softmax.v Witprobe/Sum.vio
Witprobe/Softmax.vos Witprobe/Softmax.vok Witprobe/Softmax.required_vos: Witprobe/Softmax.v Witprobe/Sum.vos
Witprobe/ExpLn.vo Witprobe/ExpLn.glob Witprobe/ExpLn.v.beautified Witprobe/ExpLn.required_vo: Witprobe/ExpLn.v 
Witprobe/ExpLn.vio: Witprobe/ExpLn.v 
Witprobe/ExpLn.vos Witprobe/ExpLn.vok Witprobe/ExpLn.required_vos: Witprobe/ExpLn.v 
Witprobe/Metric.vo Witprobe/Metric.glob Witprobe/Metric.v.beautified Witprobe/Metric.required_vo: Witprobe/Metric.v 
Witprobe/Metric.vio: Witprobe/Metric.v 
Witprobe/Metric.vos Witprobe/Metric.vok Witprobe/Metric.required_vos: Witprobe/Metric.v 
Witprobe/Chain.vo Witprobe/Chain.glob Witprobe/Chain.v.beautified Witprobe/Chain.required_vo: Witprobe/Chain.v Witprobe/Sum.vo Witprobe/Softmax.vo Witprobe/ExpLn.vo Witprobe/Metric.vo
Witprobe/Chain.vio: Witprobe/Chain.v Witprobe/Sum.vio Witprobe/Softmax.vio Witprobe/ExpLn.vio Witprobe/Metric.vio
Witprobe/Chain.vos Witprobe/Chain.vok Witprobe/Chain.required_vos: Witprobe/Chain.v Witprobe/Sum.vos Witprobe/Softmax.vos Witprobe/ExpLn.vos Witprobe/Metric.vos
Witprobe/Budget.vo Witprobe/Budget.glob Witprobe/Budget.v.beautified Witprobe/Budget.required_vo: Witprobe/Budget.v Witprobe/Sum.vo
Witprobe/Budget.vio: Witprobe/Budget.v Witprobe/Sum.vio
Witprobe/Budget.vos Witprobe/Budget.vok Witprobe/Budget.required_vos: Witprobe/Budget.v Witprobe/Sum.vos
Witprobe/Ville.vo Witprobe/Ville.glob Witprobe/Ville.v.beautified Witprobe/Ville.required_vo: Witprobe/Ville.v Witprobe/Sum.vo Witprobe/ExpLn.vo
Witprobe/Ville.vio: Witprobe/Ville.v Witprobe/Sum.vio Witprobe/ExpLn.vio
Witprobe/Ville.vos Witprobe/Ville.vok Witprobe/Ville.required_vos: Witprobe/Ville.v Witprobe/Sum.vos Witprobe/ExpLn.vos
Witprobe/Sentinel.vo Witprobe/Sentinel.glob Witprobe/Sentinel.v.beautified Witprobe/Sentinel.required_vo: Witprobe/Sentinel.v Witprobe/Sum.vo Witprobe/ExpLn.vo Witprobe/Ville.vo
Witprobe/Sentinel.vio: Witprobe/Sentinel.v Witprobe/Sum.vio Witprobe/ExpLn.vio Witprobe/Ville.vio
Witprobe/Sentinel.vos Witprobe/Sentinel.vok Witprobe/Sentinel.required_vos: Witprobe/Sentinel.v Witprobe/Sum.vos Witprobe/ExpLn.vos Witprobe/Ville.vos
