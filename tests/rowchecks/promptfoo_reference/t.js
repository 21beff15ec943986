module.exports = (output, context) => output.toLowerCase() + '#' + context.vars.topic;
module.exports.shout = (output) => output + '!';
