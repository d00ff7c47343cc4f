package turn

// ModelDim exposes modelDim to the black-box tests.
func (e *Engine) ModelDim(specModel string) string { return e.modelDim(specModel) }
